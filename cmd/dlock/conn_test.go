package main

import (
	"strings"
	"testing"
)

// TestPickRedis checks where the verbs find their servers and passwords.
func TestPickRedis(t *testing.T) {
	tests := []struct {
		name        string
		flags       []string
		env         map[string]string
		addr, shown string // of each server, comma-separated
		password    string // of each server
		err         string // a part of the error, if one is expected
	}{
		{name: "default", addr: "127.0.0.1:6379", shown: defaultRedisURL},
		{name: "flag", flags: []string{"redis://h:1/2"}, addr: "h:1", shown: "redis://h:1/2"},
		{name: "flag before env", flags: []string{"redis://h:1"}, env: map[string]string{envRedis: "redis://e:2"}, addr: "h:1", shown: "redis://h:1"},
		{name: "env", env: map[string]string{envRedis: " redis://e:2/0 ,"}, addr: "e:2", shown: "redis://e:2/0"},
		{name: "TLS", flags: []string{"rediss://u:pw@h:1"}, addr: "h:1", shown: "rediss://u:xxxxx@h:1", password: "pw"},
		{name: "password from env", env: map[string]string{envRedis: "redis://e:2", envRedisPassword: "pw"}, addr: "e:2", shown: "redis://e:2", password: "pw"},
		{name: "password in URL first", flags: []string{"redis://:url@h:1"}, env: map[string]string{envRedisPassword: "env"}, addr: "h:1", shown: "redis://:xxxxx@h:1", password: "url"},
		{name: "quorum", flags: []string{"redis://a:1", "rediss://:pw@b:1/2", "redis://c:1"}, addr: "a:1,b:1,c:1",
			shown: "redis://a:1,rediss://:xxxxx@b:1/2,redis://c:1", password: ",pw,"},
		{name: "quorum in env", env: map[string]string{envRedis: "redis://a:1, redis://b:1,,redis://c:1", envRedisPassword: "pw"}, addr: "a:1,b:1,c:1",
			shown: "redis://a:1,redis://b:1,redis://c:1", password: "pw,pw,pw"},
		{name: "quorum, a password in a URL", env: map[string]string{envRedis: "redis://a:1,redis://:url@b:1", envRedisPassword: "env"}, addr: "a:1,b:1",
			shown: "redis://a:1,redis://:xxxxx@b:1", password: "env,url"},
		{name: "twice", flags: []string{"redis://a:1", "redis://:s3cret@b:1", "redis://:s3cret@b:1"},
			err: "dlock: --redis redis://:xxxxx@b:1 is given twice; the nodes of a Redlock quorum must be distinct, independent servers"},
		{name: "same server", env: map[string]string{envRedis: "redis://a:1/0,redis://a:1/1"},
			err: "dlock: DLOCK_REDIS redis://a:1/0 and redis://a:1/1 are the same server; "},
		{name: "same default port", flags: []string{"redis://a", "redis://a:6379"}, err: "are the same server"},
		{name: "bad in quorum", flags: []string{"redis://a:1", "redis://b:1/x"}, err: "bad --redis URL redis://b:1/x: "},
		{name: "bad in env", env: map[string]string{envRedis: "tcp://a:1"}, err: "bad DLOCK_REDIS URL (not shown, as it may hold a password): it does not start with redis://"},
	}
	for _, tt := range tests {
		srvs, err := pickRedis(tt.flags, func(name string) string { return tt.env[name] })
		var addr, shown, password []string
		for _, srv := range srvs {
			addr, shown, password = append(addr, srv.opts.Addr), append(shown, srv.shown), append(password, srv.opts.Password)
		}
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: the error has the password: %v", tt.name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case strings.Join(addr, ",") != tt.addr || strings.Join(shown, ",") != tt.shown || strings.Join(password, ",") != tt.password:
			t.Errorf("%s: addr %q, shown %q, password %q; want %q, %q, %q",
				tt.name, addr, shown, password, tt.addr, tt.shown, tt.password)
		}
	}
}

// TestBadURLHidesPassword gives the verbs URLs that are wrong in many ways,
// each with a password: no part of the password is in what they print,
// whatever the defect, and each is a usage error. The password's parts are
// strings that dlock's messages never hold.
func TestBadURLHidesPassword(t *testing.T) {
	t.Parallel()
	urls := []string{
		"redis://:Qj7%zzK@h:1",            // a bad escape, which url.Parse quotes
		"redis://:Qj7%Vw8@h:1",            // another
		"REDIS://:Qj7%zzK@h:1",            // the scheme in capitals
		"rediss://u:Qj7%zzK@h:1/0",        // TLS
		"redis://u:Qj7/Vw8@h:1",           // an unescaped '/' ends the host early
		"redis://u:Qj7?Vw8@h:1",           // '?'
		"redis://u:Qj7#Vw8@h:1",           // '#'
		"redis://u:71/Vw8@h:1",            // the password's start taken for a port, its rest for the db
		"redis://u:71?db=Vw8@h:1",         // its rest for the query
		"redis://u:71#Vw8@h:1",            // its rest for the fragment, which go-redis ignores
		"redis://u:Qj7 Vw8@h:1",           // a space
		"redis://u:Qj7\x01Vw8@h:1",        // a control character
		"redis://u:Qj7[Vw8@h:1",           // a character userinfo cannot hold
		"redis://:Qj7Vw8@h:notaport",      // a bad port
		"redis://:Qj7Vw8@h:1/notadb",      // a bad db
		"redis://:Qj7Vw8@h:1/0?db=Qj7Vw8", // the password in the query
		"redis://:Qj7Vw8@h:1/0?nosuch=1",  // an unknown option
		"redis://:Qj7Vw8@[::1",            // a bad IPv6 host
		"redis:/:Qj7Vw8@h:1",              // one slash: no scheme
		"u:Qj7Vw8@h:1",                    // no scheme: url.Parse takes "u" for one
		"Qj7Vw8",                          // the password alone
		"tcp://:Qj7Vw8@h:1",               // another scheme
		"unix://:Qj7%zzK@/tmp/redis.sock", // a socket
		"redis://:Qj7%zzK@h:1 ",           // trailing space
	}
	secrets := []string{"Qj7", "Vw8", "zzK", "%zz", "zz"}
	for _, raw := range urls {
		for _, args := range [][]string{
			{"status", "k", "--redis", raw},
			{"run", "--key", "k", "--redis", raw, "--", "true"},
			{"elect", "--key", "k", "--redis", raw, "--", "true"},
			{"leader", "--key", "k", "--redis", raw},
			{"release", "--force", "k", "--redis", raw},
		} {
			code, stdout, stderr := runCLI(t, args...)
			if code != exitUsage {
				t.Errorf("dlock %s with %q: exit status %d, want %d; stderr: %s", args[0], raw, code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, "bad --redis URL") {
				t.Errorf("dlock %s with %q: stderr does not say the URL is bad: %s", args[0], raw, stderr)
			}
			for _, secret := range secrets {
				if strings.Contains(stdout+stderr, secret) {
					t.Errorf("dlock %s with %q printed %q, a part of the password:\n%s%s", args[0], raw, secret, stdout, stderr)
				}
			}
		}
	}
	// Through DLOCK_REDIS, as a quorum's second URL.
	for _, raw := range urls {
		_, err := pickRedis(nil, func(name string) string {
			if name == envRedis {
				return "redis://a:1," + raw
			}
			return ""
		})
		if err == nil {
			t.Errorf("DLOCK_REDIS %q: no error", raw)
			continue
		}
		for _, secret := range secrets {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("DLOCK_REDIS %q: the error has %q, a part of the password: %v", raw, secret, err)
			}
		}
	}
}
