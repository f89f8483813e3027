package invitation_test

import (
	"testing"

	"github.com/groupd/groupd/invitation"
)

func TestQuorumHolds(t *testing.T) {
	cases := []struct {
		name string
		q    invitation.Quorum
		n    int
		tb   bool
		want bool
	}{
		{"mode off: anything", invitation.Quorum{}, 1, false, true},
		{"3 of 5", invitation.Quorum{Expect: 5}, 3, false, true},
		{"2 of 5", invitation.Quorum{Expect: 5}, 2, false, false},
		{"5 of 5", invitation.Quorum{Expect: 5}, 5, false, true},
		{"half without a tie-breaker", invitation.Quorum{Expect: 4}, 2, true, false},
		{"half holding the tie-breaker", invitation.Quorum{Expect: 4, TieBreaker: 2}, 2, true, true},
		{"half without the tie-breaker", invitation.Quorum{Expect: 4, TieBreaker: 2}, 2, false, false},
		{"more nodes than expected", invitation.Quorum{Expect: 2}, 3, false, true},
		{"one of one", invitation.Quorum{Expect: 1}, 1, false, true},
	}
	for _, tc := range cases {
		if got := tc.q.Holds(tc.n, tc.tb); got != tc.want {
			t.Errorf("%s: Holds(%d, %v) = %v, want %v", tc.name, tc.n, tc.tb, got, tc.want)
		}
	}
}

func TestQuorumValidate(t *testing.T) {
	for _, q := range []invitation.Quorum{{Expect: -1}, {TieBreaker: 3}} {
		if err := q.Validate(); err == nil {
			t.Errorf("%+v accepted", q)
		}
	}
	if err := (invitation.Quorum{Expect: 4, TieBreaker: 3}).Validate(); err != nil {
		t.Error(err)
	}
}
