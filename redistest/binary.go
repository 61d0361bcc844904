package redistest

import (
	"fmt"
	"os"
	"os/exec"
)

// BinaryEnv is the environment variable that names the redis-server binary to
// run. When it is unset or empty, redis-server is looked up in PATH.
const BinaryEnv = "REDIS_SERVER_BIN"

// installHint tells a user who has no redis-server how to get one.
const installHint = `install it with "sudo apt-get install -y redis-server" (Debian/Ubuntu) or set ` +
	BinaryEnv + ` to its path`

// findBinary returns the path of the redis-server binary to run.
func findBinary() (string, error) {
	if bin := os.Getenv(BinaryEnv); bin != "" {
		path, err := exec.LookPath(bin)
		if err != nil {
			return "", fmt.Errorf("redistest: %s=%q is not an executable: %v; fix it, or unset it and "+
				`install redis-server with "sudo apt-get install -y redis-server" (Debian/Ubuntu)`,
				BinaryEnv, bin, err)
		}
		return path, nil
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redistest: redis-server not found in PATH: %s", installHint)
	}
	return path, nil
}
