module github.com/dlock-go/dlock/scripts/modproxy

go 1.26.0

require golang.org/x/mod v0.42.0
