package wire

import "testing"

func benchBeacon() Message {
	return Message{Header: testHeader(), Body: Beacon{Addr: "192.168.1.10:7947"}}
}

func benchReady64() Message {
	members := make([]Member, 64)
	for i := range members {
		members[i] = Member{ID: NodeID(i + 1), Priority: DefaultPriority}
	}
	return Message{Header: testHeader(), Body: Ready{Group: GroupNumber{Seq: 18, ID: 3}, Version: 2, Total: 64, Members: members}}
}

func benchMessages() []struct {
	name string
	m    Message
} {
	return []struct {
		name string
		m    Message
	}{{"Beacon", benchBeacon()}, {"Ready64", benchReady64()}}
}

func BenchmarkEncode(b *testing.B) {
	for _, bm := range benchMessages() {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(bm.m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendEncode is the runtime's path: one reused send buffer.
func BenchmarkAppendEncode(b *testing.B) {
	for _, bm := range benchMessages() {
		b.Run(bm.name, func(b *testing.B) {
			buf := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				out, err := AppendEncode(buf[:0], bm.m)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(out)))
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, bm := range benchMessages() {
		b.Run(bm.name, func(b *testing.B) {
			pkt, err := Encode(bm.m)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(pkt)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(pkt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSeal(b *testing.B) {
	for _, bm := range benchMessages() {
		b.Run(bm.name, func(b *testing.B) {
			s := mustSealer(b, testKey(1))
			pkt, _ := Encode(bm.m)
			buf := make([]byte, 0, MaxDatagramSize)
			b.SetBytes(int64(len(pkt)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Seal(buf[:0], pkt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	for _, bm := range benchMessages() {
		b.Run(bm.name, func(b *testing.B) {
			s := mustSealer(b, testKey(1))
			pkt, _ := Encode(bm.m)
			sealed, _ := s.Seal(nil, pkt)
			buf := make([]byte, 0, MaxPacketSize)
			b.SetBytes(int64(len(pkt)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Open(buf[:0], sealed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenRotation opens a packet sealed with the second of two keys:
// the cost of trial decryption during a key rotation.
func BenchmarkOpenRotation(b *testing.B) {
	s := mustSealer(b, testKey(2), testKey(1))
	pkt, _ := Encode(benchBeacon())
	sealed, _ := mustSealer(b, testKey(1)).Seal(nil, pkt)
	buf := make([]byte, 0, MaxPacketSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Open(buf[:0], sealed); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReplayAccept(b *testing.B) {
	w := NewReplayWindow(256)
	for id := NodeID(1); id <= 64; id++ {
		w.Verify(Header{From: id, Boot: 1}, 0)
	}
	h := Header{From: 1, Boot: 1}
	b.ReportAllocs()
	for b.Loop() {
		h.Counter++
		h.From = NodeID(1 + h.Counter%64)
		if err := w.Accept(h); err != nil {
			b.Fatal(err)
		}
	}
}
