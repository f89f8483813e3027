package schema

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

func TestStatusJSONRoundTrip(t *testing.T) {
	s := Status{
		ID: 3, Name: "db3", Priority: 100, State: wire.StateReorganization, Role: wire.RoleParticipant,
		Group: wire.GroupNumber{Seq: 17, ID: 5}, Coordinator: 5, CoordinatorName: "db5", Members: []wire.NodeID{1, 2, 3},
		MemberPriorities: []uint8{100, 255, 0}, Version: 2,
		Since: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), Counter: 16, Incarnation: 5, Boot: 0xbeef,
		PersistError: "disk full", Degraded: true, Time: time.Date(2026, 11, 21, 10, 0, 1, 5, time.UTC),
		Expect: 5, Tags: map[string]string{"a": "b"},
		DuplicateID: &DuplicateID{Boot: 7, Addr: "10.0.0.9:7950", Since: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)},
		TieBreaker:  3, Rule: &QuorumRule{Voters: 6, Extra: []wire.NodeID{2}},
		QuorumMismatches: []QuorumMismatch{{Peer: 4, Expect: 6, TieBreaker: 1, Detail: "--expect 6 (this node 5), --tie-breaker 1 (this node 3)"}},
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":3,"name":"db3","priority":100,"state":"reorganization","role":"participant","group":"17.5",` +
		`"coordinator":5,"coordinator_name":"db5","members":[1,2,3],"member_priorities":[100,255,0],"version":2,` +
		`"since":"2026-11-21T10:00:00Z","counter":16,"incarnation":5,"boot":"beef","persist_error":"disk full",` +
		`"degraded":true,"time":"2026-11-21T10:00:01.000000005Z","primary":false,"lease_until":null,"expect":5,"leader":false,` +
		`"leader_since":null,"term":"","tags":{"a":"b"},` +
		`"duplicate_id":{"boot":7,"addr":"10.0.0.9:7950","since":"2026-11-21T10:00:00Z"},"timing_mismatches":[],` +
		`"tie_breaker":3,"quorum_rule":{"voters":6,"tie_breaker":0,"extra":[2]},` +
		`"quorum_mismatches":[{"peer":4,"expect":6,"tie_breaker":1,"detail":"--expect 6 (this node 5), --tie-breaker 1 (this node 3)"}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back Status
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.String() != s.String() || !back.Since.Equal(s.Since) || back.PersistError != s.PersistError || back.Expect != 5 ||
		!slices.Equal(back.MemberPriorities, s.MemberPriorities) || back.Boot != s.Boot || back.Tags["a"] != "b" ||
		back.DuplicateID == nil || back.DuplicateID.Addr != s.DuplicateID.Addr || !back.Degraded ||
		!reflect.DeepEqual(back.Rule, s.Rule) || !reflect.DeepEqual(back.QuorumMismatches, s.QuorumMismatches) || back.TieBreaker != 3 {
		t.Errorf("round trip: %+v", back)
	}
	empty, _ := json.Marshal(Status{State: wire.StateElection})
	if !strings.Contains(string(empty), `"members":[]`) {
		t.Errorf("empty members must be [], got %s", empty)
	}
	for _, bad := range []string{`{"state":"x"}`, `{"state":"normal","role":"boss"}`, `{"state":"normal","group":"x"}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// FuzzStatusJSON: Status.UnmarshalJSON never panics, and what it accepts
// marshals back to JSON that decodes to the same status.
func FuzzStatusJSON(f *testing.F) {
	f.Add(`{"id":3,"priority":100,"state":"normal","role":"coordinator","group":"17.3","coordinator":3,"members":[1,2,3],"version":2,"since":"2026-11-21T10:00:00Z","counter":17,"incarnation":5,"persist_error":"","time":"2026-11-21T10:00:00Z"}`)
	f.Add(`{"state":"election","group":"0.0"}`)
	f.Add(`{"state":"normal","group":"1.x"}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, in string) {
		var s Status
		if err := json.Unmarshal([]byte(in), &s); err != nil || !s.State.Valid() {
			return // rejected, or null (which leaves the zero Status)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal %+v: %v", s, err)
		}
		var back Status
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		b2, _ := json.Marshal(back)
		if string(b) != string(b2) {
			t.Fatalf("round trip:\n%s\n%s", b, b2)
		}
	})
}

// TestCloneSharesNothing: every field of Status that refers to memory
// (slice, map, pointer) is copied by Clone, including fields added later.
func TestCloneSharesNothing(t *testing.T) {
	s := Status{
		Members: []wire.NodeID{1, 2}, MemberPriorities: []uint8{100, 50}, Tags: map[string]string{"a": "b"},
		DuplicateID: &DuplicateID{Boot: 7}, TimingMismatches: []TimingMismatch{{Peer: 2, Detail: "d"}},
		Rule: &QuorumRule{Voters: 5, Extra: []wire.NodeID{2}}, QuorumMismatches: []QuorumMismatch{{Peer: 4, Expect: 5}},
	}
	c := s.Clone()
	if &c.Rule.Extra[0] == &s.Rule.Extra[0] {
		t.Errorf("Clone shares the rule's Extra")
	}
	if !reflect.DeepEqual(c, s) {
		t.Fatalf("clone %+v differs from %+v", c, s)
	}
	sv, cv := reflect.ValueOf(s), reflect.ValueOf(c)
	for i := range sv.NumField() {
		f := sv.Type().Field(i)
		switch f.Type.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer:
			if sv.Field(i).IsNil() {
				t.Errorf("the test leaves %s nil: give it a value", f.Name)
			} else if sv.Field(i).UnsafePointer() == cv.Field(i).UnsafePointer() {
				t.Errorf("Clone shares %s", f.Name)
			}
		case reflect.Struct, reflect.String, reflect.Bool, reflect.Int, reflect.Uint8, reflect.Uint64:
		default:
			t.Errorf("field %s of kind %s: does Clone need to copy it?", f.Name, f.Type.Kind())
		}
	}
	var e Event
	e.Old = &s
	if ec := e.Clone(); ec.Old == e.Old || &ec.Old.Members[0] == &s.Members[0] {
		t.Error("Event.Clone shares the old view")
	}
}
