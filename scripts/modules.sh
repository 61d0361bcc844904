# shellcheck shell=bash
# The repository's modules, for scripts/test, scripts/release-check and
# scripts/release-bump (which source this file from the repository's root).

# dlock_prefix is the module path of the root; the other modules' paths are
# the root's path and their directory.
dlock_prefix=github.com/dlock-go/dlock

# public_modules prints the directories of the modules users fetch, one a
# line, as scripts/public-modules lists them.
public_modules() {
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' scripts/public-modules
}

# workspace_modules prints the directories that go.work uses, one a line,
# without their leading "./".
workspace_modules() {
	go work edit -json | awk '$1 == "\"DiskPath\":" { d = $2; gsub(/[",]/, "", d); sub(/^\.\//, "", d); print (d == "" ? "." : d) }'
}

# module_path prints the module path that the go.mod in directory $1 declares.
module_path() {
	awk '$1 == "module" { print $2; exit }' "$1/go.mod"
}

# module_dir prints the directory of the dlock module whose path is $1.
module_dir() {
	local rest=${1#"$dlock_prefix"}
	rest=${rest#/}
	echo "${rest:-.}"
}

# sibling_requires prints "path version" for each dlock module that the
# go.mod in directory $1 requires.
sibling_requires() {
	go mod edit -json "$1/go.mod" | awk -v p="\"$dlock_prefix" '
		/"Require":/ { inreq = 1 } /^\t\]/ { inreq = 0 }
		inreq && $1 == "\"Path\":" { path = ""; if ($2 == p "\"," || index($2, p "/") == 1) { path = $2; gsub(/[",]/, "", path) } }
		inreq && $1 == "\"Version\":" && path != "" { v = $2; gsub(/[",]/, "", v); print path, v; path = "" }'
}

# workspace_version prints the version at which go.work replaces the root
# module by its directory: the version being prepared (scripts/release-bump).
workspace_version() {
	go work edit -json | awk -v p="\"$dlock_prefix\"" '
		/"Old":/ { inold = 1 } /"New":/ { inold = 0 }
		inold && $1 == "\"Path\":" { path = $2; sub(/,$/, "", path) }
		inold && $1 == "\"Version\":" && path == p { v = $2; gsub(/[",]/, "", v); print v; exit }'
}
