package cgroup

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseMountinfo(t *testing.T) {
	hybrid := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:7 - cgroup2 cgroup2 rw
`
	pure := `25 21 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	v1 := `32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
`
	bind := `77 60 0:22 /system.slice/x.service /mnt/my\040cg rw - cgroup2 cgroup2 rw
`
	cases := []struct {
		name, text string
		want       []mount
	}{
		{"hybrid", hybrid, []mount{{"/sys/fs/cgroup/unified", "/"}}},
		{"pure v2", pure, []mount{{"/sys/fs/cgroup", "/"}}},
		{"v1 only", v1, nil},
		{"bind-mounted subtree, escaped space", bind, []mount{{"/mnt/my cg", "/system.slice/x.service"}}},
	}
	for _, tc := range cases {
		got, err := parseMountinfo(strings.NewReader(tc.text))
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	self, err := parseSelf(strings.NewReader("12:pids:/\n0::/system.slice/groupd.service\n"))
	if err != nil || self != "/system.slice/groupd.service" {
		t.Fatalf("parseSelf: %q, %v", self, err)
	}
	if _, err := parseSelf(strings.NewReader("4:memory:/x\n")); !errors.Is(err, ErrNoCgroup2) {
		t.Errorf("parseSelf without a v2 line: %v, want ErrNoCgroup2", err)
	}
	cases := []struct {
		mounts []mount
		want   string
		bad    bool
	}{
		{[]mount{{"/sys/fs/cgroup", "/"}}, "/sys/fs/cgroup/system.slice/groupd.service", false},
		{[]mount{{"/sys/fs/cgroup/unified", "/"}}, "/sys/fs/cgroup/unified/system.slice/groupd.service", false},
		{[]mount{{"/mnt/cg", "/system.slice"}}, "/mnt/cg/groupd.service", false},
		{[]mount{{"/mnt/cg", "/system.slic"}}, "", true}, // a prefix of a name is not a parent
		{[]mount{{"/mnt/cg", "/user.slice"}}, "", true},
		{nil, "", true},
	}
	for _, tc := range cases {
		got, err := resolve(tc.mounts, self)
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("resolve(%v): %q, %v; want %q (error: %v)", tc.mounts, got, err, tc.want, tc.bad)
		}
	}
	if _, err := resolve(nil, "/"); !errors.Is(err, ErrNoCgroup2) {
		t.Errorf("no mounts: %v, want ErrNoCgroup2", err)
	}
}
