package group

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/groupd/groupd/invitation"
)

// Resource bounds against floods (issue 7).
//
// A packet reaches the event loop through three bounded stages, each of
// which drops (and counts) rather than queue without bound:
//
//  1. sourceLimiter: a token bucket per source IP address, checked on the
//     socket reader before anything else (before AES-GCM and decoding), so
//     that one flooding address costs a map lookup per packet and cannot
//     crowd out the others. Dropped as "rate_limited".
//  2. Two queues to the loop: beacons, inboxShed of them, and every other
//     decoded packet, inboxSize. When the loop falls behind, a new packet
//     that finds its queue full is dropped, as "shed" for a beacon and
//     "queue_full" for the rest, and the loop takes every other packet
//     before the next beacon. A beacon is repeated every interval and says
//     what the next one will say; an Accept, a ReadyAck or an AreYouThere
//     lost to a full queue, or handled after its window, costs a merge or
//     an election. In a 256-node cold start on two cores the top node
//     received 125,877 beacons in four minutes and dropped 101,660 packets
//     of every kind; with beacons shed at half a shared queue, Accepts
//     still waited behind 512 beacons.
//  3. The algorithm's own bounds: invitation.MaxGroupSize members and known
//     peers, maxPeers address-book entries, the replay window's maxPeers
//     senders.
//
// Logs about dropped packets go through a logLimiter: at most one line per
// reason every logEvery, with the number of lines held back in between.

const (
	// DefaultRateLimit is Config.RateLimit's default: packets per second
	// accepted from one source IP address. A node sends another node a few
	// to a few dozen packets per second (AreYouThere and its Yes every
	// AliveInterval, beacons, a merge's Invitation/Accept/Ready with their
	// retransmissions every AnswerTimeout), and a Ready split for a
	// 4096-member group is 28 datagrams per retransmission (57 at
	// invitation.MaxGroupSize, which the burst absorbs): 500/s leaves
	// room for several nodes behind one address (several daemons on one
	// host, NAT) in the fast profile.
	DefaultRateLimit = 500

	// maxSources bounds the token buckets. Beyond it (a flood from
	// spoofed addresses), buckets full again are reclaimed at most once
	// a second, and new addresses meanwhile share one overflow bucket.
	maxSources = invitation.MaxGroupSize

	// logEvery is the period of logLimiter: at most one line per key.
	logEvery = 10 * time.Second

	// maxLogKeys bounds logLimiter's keys; the rest share one.
	maxLogKeys = 128
)

// sourceLimiter is a token bucket per source IP address: rate tokens per
// second, at most burst. Safe for concurrent use (the wire and multicast
// readers share one). The buckets are golang.org/x/time/rate's; this type
// keeps their number bounded.
type sourceLimiter struct {
	rate  rate.Limit
	burst int

	mu        sync.Mutex
	buckets   map[netip.Addr]*rate.Limiter
	overflow  *rate.Limiter // shared by new sources while buckets is full
	lastSweep time.Time
}

// newSourceLimiter returns a limiter of perSecond packets per second per
// source, with a burst of two seconds' worth; nil (no limit) if perSecond
// <= 0.
func newSourceLimiter(perSecond int) *sourceLimiter {
	if perSecond <= 0 {
		return nil
	}
	l := &sourceLimiter{
		rate:    rate.Limit(perSecond),
		burst:   2 * perSecond,
		buckets: make(map[netip.Addr]*rate.Limiter),
	}
	l.overflow = rate.NewLimiter(l.rate, l.burst)
	return l
}

// allow takes a token from src's bucket and reports whether there was one.
// A nil limiter allows everything; so does an unknown source address.
func (l *sourceLimiter) allow(src *net.UDPAddr, now time.Time) bool {
	if l == nil || src == nil {
		return true
	}
	ip, ok := netip.AddrFromSlice(src.IP)
	if !ok {
		return true
	}
	ip = ip.Unmap()
	// Held across AllowN too, so that a sweep cannot forget a bucket
	// between its lookup and its use.
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[ip]
	if b == nil {
		if len(l.buckets) >= maxSources {
			l.sweep(now)
		}
		if len(l.buckets) >= maxSources {
			b = l.overflow
		} else {
			b = rate.NewLimiter(l.rate, l.burst) // full
			l.buckets[ip] = b
		}
	}
	return b.AllowN(now, 1)
}

// sweep forgets buckets that are full by now (forgetting them changes
// nothing: a new one starts full), at most once a second. Call with mu
// held.
func (l *sourceLimiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < time.Second {
		return
	}
	l.lastSweep = now
	for ip, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, ip)
		}
	}
}

// sources returns how many source addresses have a bucket (tests).
func (l *sourceLimiter) sources() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// logLimiter lets at most one log line per key through every interval and
// counts the ones it held back, so that a flood of bad packets (or of
// memberlist complaints about them) cannot flood the log. Keys are a small
// closed set (drop reasons) or bounded (maxLogKeys; beyond, one shared
// key). Safe for concurrent use.
type logLimiter struct {
	interval time.Duration

	mu   sync.Mutex
	keys map[string]*logKey
}

type logKey struct {
	last       time.Time
	suppressed uint64
}

func newLogLimiter(interval time.Duration) *logLimiter {
	return &logLimiter{interval: interval, keys: make(map[string]*logKey)}
}

// allow reports whether a line for key may be logged at now and, if so, how
// many lines for key were held back since the last one logged.
func (l *logLimiter) allow(key string, now time.Time) (bool, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.keys[key]
	if k == nil {
		if len(l.keys) >= maxLogKeys {
			key = "(other)"
			k = l.keys[key]
		}
		if k == nil {
			k = &logKey{}
			l.keys[key] = k
		}
	}
	if !k.last.IsZero() && now.Sub(k.last) < l.interval {
		k.suppressed++
		return false, 0
	}
	n := k.suppressed
	k.last, k.suppressed = now, 0
	return true, n
}

// memberlistLogKey is the logLimiter key of a memberlist log line: its
// level and the message's fixed start, before the first ':', '(', quote or
// "from=" and without digits, at most four words. Memberlist's messages
// are fixed formats with the variable parts (errors, addresses, node
// names, message types) after those, so the key names the kind of
// complaint.
func memberlistLogKey(level, msg string) string {
	if i := strings.IndexAny(msg, ":(\"'"); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, "from="); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, msg)
	words := strings.Fields(msg)
	if len(words) > 4 {
		words = words[:4]
	}
	return level + " " + strings.Join(words, " ")
}
