package group

import (
	"bytes"
	"log"
	"net"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// mlLogWriter routes memberlist's log lines into zerolog. Memberlist logs
// through a *log.Logger with lines like
//
//	[DEBUG] memberlist: Initiating push/pull sync with: 2 127.0.0.1:7951
//
// so the writer parses the bracketed level, drops the redundant
// "memberlist: " prefix (the logger already says component=memberlist)
// and logs the rest at the matching zerolog level. Lines without a level
// are logged at info. It is safe for concurrent use: log.Logger serialises
// its writes, and zerolog's writer is expected to be safe already.
//
// Warnings and errors are rate-limited: memberlist logs one for every bad
// packet it receives ("Decrypt packet failed", "msg type (n) not
// supported", ...), so a flood at its port would flood the log. Each kind
// of complaint (memberlistLogKey) gets at most one line every logEvery,
// with a "suppressed" count of the lines held back since the previous one.
type mlLogWriter struct {
	log   zerolog.Logger
	limit *logLimiter
}

// maxMLLogLine bounds one memberlist log message, in bytes.
const maxMLLogLine = 300

// newStdLogger returns a *log.Logger (what memberlist.Config.Logger
// wants) writing into l.
func newStdLogger(l zerolog.Logger) *log.Logger {
	return log.New(mlLogWriter{log: l, limit: newLogLimiter(logEvery)}, "", 0)
}

// Write logs each line of p. It always reports success: losing a log line
// must not make memberlist fail.
func (w mlLogWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		level, msg := parseMemberlistLine(string(line))
		if level > zerolog.DebugLevel && strings.Contains(msg, net.ErrClosed.Error()) {
			// Memberlist's gossip and probe goroutines may send once
			// more after Shutdown closed its transport: a clean stop
			// logged "[ERR] Failed to send gossip ...: use of closed
			// network connection". The socket was closed by this
			// process, so it is no error of the network's.
			level = zerolog.DebugLevel
		}
		if level > zerolog.DebugLevel && strings.HasPrefix(msg, "Conflicting address for ") {
			// Two processes announce one node name (ID). Memberlist tells
			// the conflict delegate too, which logs it with the ID and
			// both addresses (gossipDelegate.NotifyConflict), and the
			// wire protocol settles which process gives way, logging one
			// error (design §3.6): this line would be a second error for
			// one mistake.
			level = zerolog.DebugLevel
		}
		if len(msg) > maxMLLogLine {
			// Memberlist quotes what it received (a bad label, a
			// node name): a hostile peer must not fill the log.
			msg = msg[:maxMLLogLine] + "…(truncated)"
		}
		if level >= zerolog.WarnLevel && w.limit != nil {
			ok, n := w.limit.allow(memberlistLogKey(level.String(), msg), time.Now())
			if !ok {
				continue
			}
			if n > 0 {
				w.log.WithLevel(level).Uint64("suppressed", n).Msg(msg)
				continue
			}
		}
		w.log.WithLevel(level).Msg(msg)
	}
	return len(p), nil
}

// parseMemberlistLine splits a memberlist log line into a level and the
// message.
func parseMemberlistLine(line string) (zerolog.Level, string) {
	line = strings.TrimSpace(line)
	level := zerolog.InfoLevel
	if rest, ok := strings.CutPrefix(line, "["); ok {
		if tag, msg, ok := strings.Cut(rest, "]"); ok {
			if l, known := memberlistLevels[tag]; known {
				level = l
				line = strings.TrimSpace(msg)
			}
		}
	}
	line = strings.TrimPrefix(line, "memberlist: ")
	return level, line
}

// memberlistLevels maps the level tags memberlist (and hashicorp's
// logutils convention) writes.
var memberlistLevels = map[string]zerolog.Level{
	"TRACE": zerolog.TraceLevel,
	"DEBUG": zerolog.DebugLevel,
	"INFO":  zerolog.InfoLevel,
	"WARN":  zerolog.WarnLevel,
	"ERR":   zerolog.ErrorLevel,
	"ERROR": zerolog.ErrorLevel,
}
