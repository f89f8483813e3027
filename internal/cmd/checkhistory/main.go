// Command checkhistory replays a recorded lab run through the invariant
// checker and says whether S1–S5 and LP1 held over the whole history and whether
// every check point held (L1 at quiet and heal check points, per-side L1,
// L2 at failover check points; see package internal/history, which does
// the work):
//
//	go run ./internal/cmd/checkhistory -history RUN/history.ndjson [-json]
//	go run ./internal/cmd/checkhistory -events OUT/events.ndjson -faults OUT/faults.ndjson [-json]
//
// The lab's run dir keeps events and marks in one file (history.ndjson);
// an experiment's results keep them apart (events.ndjson, faults.ndjson).
// Every file may hold either kind of line.
//
// Exit status: 0 clean, 1 a violation or a failed check point, 2 bad usage
// or unreadable input.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/groupd/groupd/internal/history"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("checkhistory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hist := fs.String("history", "", "history `FILE` (the lab's RUN/history.ndjson: events and marks)")
	events := fs.String("events", "", "events `FILE` (NDJSON of group.Event)")
	faults := fs.String("faults", "", "faults `FILE` (the lab's marks, faults.ndjson)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if (*hist == "" && *events == "") || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "checkhistory: usage: checkhistory {-history FILE | -events FILE [-faults FILE]} [-json]")
		return 2
	}
	h := history.New()
	for _, path := range []string{*hist, *events, *faults} {
		if path == "" {
			continue
		}
		if err := readFile(path, h); err != nil {
			fmt.Fprintf(stderr, "checkhistory: %v\n", err)
			return 2
		}
	}
	res := h.Replay()
	rep := history.NewReport(res, h.Bad())
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.WriteText(stdout)
	}
	if !rep.OK {
		return 1
	}
	return 0
}

func readFile(path string, h *history.History) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	if _, err := h.Read(file); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
