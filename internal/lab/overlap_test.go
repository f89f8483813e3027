package lab

import (
	"reflect"
	"testing"
	"time"
)

func TestOverlaps(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name string
		in   []Stretch
		want []Overlap
	}{
		{"none", nil, nil},
		{"one node's stretches touching", []Stretch{{1, at(0), at(10)}, {1, at(10), at(20)}}, nil},
		{"one ends as another begins", []Stretch{{1, at(0), at(10)}, {2, at(10), at(20)}}, nil},
		{"two at once", []Stretch{{1, at(0), at(10)}, {2, at(5), at(20)}}, []Overlap{{at(5), at(10), []int{1, 2}}}},
		{"three, then two", []Stretch{{1, at(0), at(30)}, {2, at(5), at(20)}, {3, at(10), at(40)}},
			[]Overlap{{at(5), at(30), []int{1, 2, 3}}}},
		{"two apart", []Stretch{{1, at(0), at(50)}, {2, at(5), at(10)}, {3, at(20), at(25)}},
			[]Overlap{{at(5), at(10), []int{1, 2}}, {at(20), at(25), []int{1, 3}}}},
		{"empty stretches ignored", []Stretch{{1, at(0), at(10)}, {2, at(5), at(5)}}, nil},
	} {
		if got := Overlaps(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Overlaps = %v, want %v", tc.name, got, tc.want)
		}
	}
}
