package group

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// TestCheckStream: the transport refuses push/pull headers that would make
// memberlist allocate for more nodes than a LAN holds, and compressed
// streams; everything else reaches memberlist byte for byte.
func TestCheckStream(t *testing.T) {
	pushPull := func(nodes, userState int) []byte {
		var b bytes.Buffer
		b.WriteByte(mlPushPullMsg)
		h := struct {
			Nodes        int
			UserStateLen int
			Join         bool
		}{nodes, userState, false}
		if err := codec.NewEncoder(&b, &codec.MsgpackHandle{}).Encode(&h); err != nil {
			t.Fatal(err)
		}
		return append(b.Bytes(), bytes.Repeat([]byte{0x90}, 100)...) // node states follow
	}
	for _, tc := range []struct {
		name   string
		stream []byte
		refuse bool
	}{
		{"push/pull of a LAN", pushPull(16, 200), false},
		{"push/pull claiming a million nodes", pushPull(1<<20, 0), true},
		{"push/pull claiming 100 MB of user state", pushPull(3, 100<<20), true},
		{"push/pull with a garbage header", append([]byte{mlPushPullMsg}, bytes.Repeat([]byte{0xc1}, 80)...), true},
		{"compressed", append([]byte{mlCompressMsg}, bytes.Repeat([]byte{1}, 80)...), true},
		{"a stream ping (short)", []byte{0, 0x81, 0xa1, 'x', 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			go func() {
				b.Write(tc.stream)
				if tc.refuse {
					return
				}
				b.Close()
			}()
			c, err := checkStream(a, time.Now().Add(2*time.Second))
			if tc.refuse {
				if !errors.Is(err, errStreamRefused) {
					t.Fatalf("accepted (err %v)", err)
				}
				b.Close()
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			got, _ := io.ReadAll(c)
			if !bytes.Equal(got, tc.stream) {
				t.Errorf("memberlist would read %d bytes, want the %d sent", len(got), len(tc.stream))
			}
		})
	}
}
