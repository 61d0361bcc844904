package main

import (
	"strings"
	"testing"
)

// TestPickRedis checks where the run verb finds its server and password.
func TestPickRedis(t *testing.T) {
	tests := []struct {
		name        string
		flags       []string
		env         map[string]string
		addr, shown string
		password    string
		err         string // a part of the error, if one is expected
	}{
		{name: "default", addr: "127.0.0.1:6379", shown: defaultRedisURL},
		{name: "flag", flags: []string{"redis://h:1/2"}, addr: "h:1", shown: "redis://h:1/2"},
		{name: "flag before env", flags: []string{"redis://h:1"}, env: map[string]string{envRedis: "redis://e:2"}, addr: "h:1", shown: "redis://h:1"},
		{name: "env", env: map[string]string{envRedis: " redis://e:2/0 ,"}, addr: "e:2", shown: "redis://e:2/0"},
		{name: "TLS", flags: []string{"rediss://u:pw@h:1"}, addr: "h:1", shown: "rediss://u:xxxxx@h:1", password: "pw"},
		{name: "password from env", env: map[string]string{envRedis: "redis://e:2", envRedisPassword: "pw"}, addr: "e:2", shown: "redis://e:2", password: "pw"},
		{name: "password in URL first", flags: []string{"redis://:url@h:1"}, env: map[string]string{envRedisPassword: "env"}, addr: "h:1", shown: "redis://:xxxxx@h:1", password: "url"},
		{name: "several flags", flags: []string{"redis://a:1", "redis://b:1"}, err: "several --redis URLs"},
		{name: "several in env", env: map[string]string{envRedis: "redis://a:1,redis://b:1"}, err: "several URLs in DLOCK_REDIS"},
		{name: "bad in env", env: map[string]string{envRedis: "tcp://a:1"}, err: "bad DLOCK_REDIS URL tcp://a:1: "},
	}
	for _, tt := range tests {
		srv, err := pickRedis(tt.flags, func(name string) string { return tt.env[name] })
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case srv.opts.Addr != tt.addr || srv.shown != tt.shown || srv.opts.Password != tt.password:
			t.Errorf("%s: addr %q, shown %q, password %q; want %q, %q, %q",
				tt.name, srv.opts.Addr, srv.shown, srv.opts.Password, tt.addr, tt.shown, tt.password)
		}
	}
}
