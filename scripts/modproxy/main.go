// Command modproxy writes a file-system Go module proxy (the layout GOPROXY=file://DIR
// reads) holding the given modules of this repository's working tree at one version,
// in the module zip format the go command downloads. scripts/release-check uses it to
// fetch the modules as a consumer would, before any tag exists.
//
// Usage, from the repository's root:
//
//	go run ./scripts/modproxy -version v0.1.0 -out DIR . prometheus cmd/dlock
//
// Each argument is a module's directory. Its files are those git tracks plus the
// untracked ones it does not ignore, as they are on disk, without the files of modules
// nested inside it; for each module, DIR gets @v/list, @v/VERSION.info, @v/VERSION.mod
// and @v/VERSION.zip under the module's escaped path.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "the version to write, e.g. v0.1.0")
	out := flag.String("out", "", "the proxy's directory, created if missing")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: modproxy -version VERSION -out DIR MODULE_DIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*version, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(version, out string, dirs []string) error {
	switch {
	case !semver.IsValid(version) || semver.Canonical(version) != version || semver.Build(version) != "":
		return fmt.Errorf("version %q is not a canonical semantic version such as v0.1.0", version)
	case out == "":
		return errors.New("-out names no directory")
	case len(dirs) == 0:
		return errors.New("no module directory given")
	}
	files, err := gitFiles()
	if err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Second)
	for _, dir := range dirs {
		modPath, err := write(out, path.Clean(filepath.ToSlash(dir)), version, now, files)
		if err != nil {
			return fmt.Errorf("module in %s: %w", dir, err)
		}
		fmt.Printf("%s@%s\n", modPath, version)
	}
	return nil
}

// gitFiles lists the working tree's files that git tracks or would track
// (untracked files it does not ignore), with slash-separated paths relative
// to the repository's root, leaving out tracked files deleted from disk.
func gitFiles() ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Stderr = os.Stderr
	list, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the working tree's files with git (run from the repository's root): %w", err)
	}
	var files []string
	for name := range strings.SplitSeq(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		if _, err := os.Lstat(filepath.FromSlash(name)); err == nil {
			files = append(files, name)
		}
	}
	return files, nil
}

// write adds the module in dir at version to the proxy in out and returns
// its module path. Files of modules nested in dir are left out by zip.Create,
// which sees their go.mod among the files.
func write(out, dir, version string, now time.Time, files []string) (string, error) {
	goMod, err := os.ReadFile(filepath.Join(filepath.FromSlash(dir), "go.mod"))
	if err != nil {
		return "", err
	}
	modPath := modfile.ModulePath(goMod)
	if modPath == "" {
		return "", errors.New("go.mod names no module")
	}
	mv := module.Version{Path: modPath, Version: version}
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return "", err
	}
	escaped, err := module.EscapePath(modPath)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}

	var zipFiles []zip.File
	prefix := dir + "/"
	if dir == "." {
		prefix = ""
	}
	for _, name := range files {
		if rel, ok := strings.CutPrefix(name, prefix); ok {
			zipFiles = append(zipFiles, diskFile{rel: rel, disk: filepath.FromSlash(name)})
		}
	}
	var archive bytes.Buffer
	if err := zip.Create(&archive, mv, zipFiles); err != nil {
		return "", err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, now})
	if err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{
		version + ".zip":  archive.Bytes(),
		version + ".mod":  goMod,
		version + ".info": info,
		"list":            []byte(version + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return modPath, nil
}

// diskFile is a file of the working tree, named in the zip by its path
// relative to its module's directory.
type diskFile struct {
	rel  string
	disk string
}

func (f diskFile) Path() string                 { return f.rel }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.disk) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.disk) }
