package main

import (
	"regexp"
	"strings"
)

// Package group's errors name the fields of group.Config (Config.Port,
// Config.Timing.AliveTimeout), as a library's should; the command line
// names its flags. flagTerms turns the one into the other.

// configFlags maps a field of group.Config to the flag of groupd run that
// sets it. TestConfigFlags keeps it complete.
var configFlags = func() map[string]string {
	m := map[string]string{
		"ID": "id", "Name": "name", "Tags": "tag", "Priority": "priority",
		"Bind": "bind", "Advertise": "advertise", "Interface": "interface",
		"Port": "port", "GossipPort": "gossip-port", "Multicast": "multicast",
		"Join": "join", "ResolveInterval": "resolve-interval",
		"DataDir": "data-dir", "MinCounter": "min-counter", "API": "api",
		"Profile": "profile", "Election": "election",
		"Quorum.Expect": "expect", "Quorum.TieBreaker": "tie-breaker", "NoPreempt": "no-preempt",
		"Key": "key-file", "AcceptKeys": "key-file", "RateLimit": "rate-limit",
		"Pprof": "pprof",
	}
	for _, f := range intervalFlags {
		m["Timing."+f.GoName()] = f.Name
	}
	return m
}()

// configField finds a field in a message: Config.Port, Config.Timing.Lease,
// and invitation's own Timing.Lease and Quorum.Expect.
var configField = regexp.MustCompile(`\b(?:Config\.([A-Z][A-Za-z]*(?:\.[A-Z][A-Za-z]*)?)|((?:Timing|Quorum)\.[A-Z][A-Za-z]*))`)

// flagTerms names flags where msg names fields of group.Config: "Config.Port
// 7959: its gossip port 7960 (Config.Port+1; Config.GossipPort sets
// another)" becomes "--port 7959: its gossip port 7960 (--port+1;
// --gossip-port sets another)". A field without a flag stays as it is.
func flagTerms(msg string) string {
	return configField.ReplaceAllStringFunc(msg, func(tok string) string {
		field := strings.TrimPrefix(tok, "Config.")
		if f, ok := configFlags[field]; ok {
			return "--" + f
		}
		return tok
	})
}
