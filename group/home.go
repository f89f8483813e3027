package group

import (
	"bytes"
	"hash/fnv"
	"os"
	"path/filepath"
)

// homeOf identifies where a node keeps its state: the machine it runs on
// and its data dir, hashed (invitation.Config.Home). Another process of a
// node's ID at the same home is the node restarted, even if its data dir
// was lost; a process elsewhere that started without a saved state is a
// second process given the ID (design §8). The machine is /etc/machine-id
// (systemd's, or D-Bus's copy), else the host name: a container or VM
// image cloned with its machine ID makes its copies one home, which is
// why a copied data dir cannot be told from the node it was copied from.
func homeOf(dataDir string) uint32 {
	h := fnv.New32a()
	h.Write(machineID())
	h.Write([]byte{0})
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	h.Write([]byte(filepath.Clean(dataDir)))
	if v := h.Sum32(); v != 0 {
		return v
	}
	return 1 // 0 means unknown
}

// machineID returns the machine's identity: its machine ID, or its host
// name when it has none.
func machineID() []byte {
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if b, err := os.ReadFile(p); err == nil {
			if b = bytes.TrimSpace(b); len(b) > 0 {
				return b
			}
		}
	}
	name, _ := os.Hostname()
	return []byte(name)
}
