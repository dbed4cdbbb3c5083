package checker

import (
	"strings"
	"testing"
	"time"
)

// The token rule is what every chaos mode relies on: fed grants whose token
// goes down, the checker must fail, however the grants arrive.
func TestChecker_decreasingTokenFails(t *testing.T) {
	base := time.Now()
	c := New()
	for i, token := range []uint64{1, 2, 3, 10, 11, 7, 12} {
		c.Record(Grant{Name: "fenced:fenced", Owner: string(rune('a' + i)), Token: token,
			Acquired: base.Add(time.Duration(i) * 10 * time.Millisecond),
			Released: base.Add(time.Duration(i)*10*time.Millisecond + 5*time.Millisecond),
			Until:    base.Add(time.Second)})
	}
	err := c.Err()
	if err == nil {
		t.Fatal("tokens 1, 2, 3, 10, 11, 7, 12: no error")
	}
	violations := c.Violations()
	if len(violations) != 1 || violations[0].Second.Token != 7 || violations[0].First.Token != 11 {
		t.Fatalf("violations %v; want one, token 7 after 11", violations)
	}
	if !strings.Contains(err.Error(), "fencing token did not increase") {
		t.Fatalf("Err() = %v", err)
	}
	if got := len(c.Grants()); got != 7 {
		t.Fatalf("Grants() has %d grants, want 7", got)
	}
}

func TestChecker(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	g := func(name, owner string, token uint64, from, released, until int) Grant {
		gr := Grant{Name: name, Owner: owner, Token: token, Acquired: at(from), Until: at(until)}
		if released >= 0 {
			gr.Released = at(released)
		}
		return gr
	}
	tests := []struct {
		name   string
		grants []Grant
		want   []string // reasons, in order
	}{
		{"disjoint", []Grant{g("L", "a", 0, 0, 10, 100), g("L", "b", 0, 10, 20, 100)}, nil},
		{"overlap", []Grant{g("L", "a", 0, 0, 10, 100), g("L", "b", 0, 5, 20, 100)}, []string{"overlapping grants"}},
		{"expired before next: Until bounds the interval", []Grant{g("L", "a", 0, 0, -1, 30), g("L", "b", 0, 40, 50, 100)}, nil},
		{"never released, still valid", []Grant{g("L", "a", 0, 0, -1, 100), g("L", "b", 0, 40, 50, 100)}, []string{"overlapping grants"}},
		{"same owner may overlap (reentrant)", []Grant{g("L", "a", 0, 0, 50, 100), g("L", "a", 0, 10, 20, 100)}, nil},
		{"different names may overlap", []Grant{g("L", "a", 0, 0, 50, 100), g("M", "b", 0, 10, 20, 100)}, nil},
		{"overlap hidden behind a short grant", []Grant{
			g("L", "a", 0, 0, 100, 200), g("L", "b", 0, 10, 20, 200), g("L", "c", 0, 30, 40, 200),
		}, []string{"overlapping grants", "overlapping grants"}},
		{"overlap with an earlier grant of another owner behind a reentrant one", []Grant{
			g("L", "a", 0, 0, 100, 200), g("L", "b", 0, 10, 11, 200), g("L", "b", 0, 20, 30, 200),
		}, []string{"overlapping grants", "overlapping grants"}},
		{"tokens increase", []Grant{g("L", "a", 1, 0, 10, 100), g("L", "b", 2, 10, 20, 100), g("L", "a", 5, 20, 30, 100)}, nil},
		{"token repeated", []Grant{g("L", "a", 3, 0, 10, 100), g("L", "b", 3, 10, 20, 100)}, []string{"fencing token did not increase"}},
		{"token went back", []Grant{g("L", "a", 7, 0, 10, 100), g("L", "b", 8, 10, 20, 100), g("L", "c", 6, 20, 30, 100)}, []string{"fencing token did not increase"}},
		{"token went back to the one before", []Grant{g("L", "a", 7, 0, 10, 100), g("L", "b", 8, 10, 20, 100), g("L", "a", 7, 20, 30, 100)}, []string{"fencing token did not increase"}},
		{"token went back, grants far apart", []Grant{g("L", "a", 9, 0, 10, 20), g("L", "b", 3, 5000, 5010, 5100)}, []string{"fencing token did not increase"}},
		{"a grant without a token among fenced ones", []Grant{g("L", "a", 4, 0, 10, 100), g("L", "b", 0, 10, 20, 100)}, []string{"fencing token did not increase"}},
		{"tokens of different names are apart", []Grant{g("L", "a", 9, 0, 10, 100), g("M", "b", 2, 10, 20, 100)}, nil},
		{"token went back on one name of two", []Grant{
			g("L", "a", 5, 0, 10, 100), g("M", "a", 5, 0, 10, 100), g("L", "b", 6, 10, 20, 100), g("M", "b", 4, 10, 20, 100),
		}, []string{"fencing token did not increase"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			for _, gr := range tt.grants {
				c.Record(gr)
			}
			var got []string
			for _, v := range c.Violations() {
				got = append(got, v.Reason)
			}
			if strings.Join(got, ";") != strings.Join(tt.want, ";") {
				t.Fatalf("violations %q, want %q", got, tt.want)
			}
			if (c.Err() == nil) != (len(tt.want) == 0) {
				t.Fatalf("Err() = %v with %d violations expected", c.Err(), len(tt.want))
			}
		})
	}
}

// A name with a limit of k grants at once: k overlapping grants pass, the
// k+1-th that overlaps all of them fails, and grants that ended free a place.
func TestChecker_Limit(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	g := func(owner string, from, released int) Grant {
		return Grant{Name: "S", Owner: owner, Acquired: at(from), Released: at(released), Until: at(1000)}
	}
	tests := []struct {
		name   string
		grants []Grant
		want   int // violations
	}{
		{"two at once of two", []Grant{g("a", 0, 50), g("b", 10, 60)}, 0},
		{"three at once of two", []Grant{g("a", 0, 50), g("b", 10, 60), g("c", 20, 30)}, 1},
		{"the third after the first ended", []Grant{g("a", 0, 15), g("b", 10, 60), g("c", 20, 30)}, 0},
		{"the third exactly when the first ended", []Grant{g("a", 0, 20), g("b", 10, 60), g("c", 20, 30)}, 0},
		{"four at once of two", []Grant{g("a", 0, 50), g("b", 1, 60), g("c", 2, 30), g("d", 3, 30)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			c.Limit("S", 2)
			for _, gr := range tt.grants {
				c.Record(gr)
			}
			violations := c.Violations()
			if len(violations) != tt.want {
				t.Fatalf("violations %v; want %d", violations, tt.want)
			}
			for _, v := range violations {
				if !strings.Contains(v.Reason, "allowed") {
					t.Fatalf("reason %q", v.Reason)
				}
			}
			if tt.want > 0 && c.Err() == nil {
				t.Fatal("Err() = nil with violations")
			}
		})
	}
}

// Read holds (one shared owner) may overlap each other and carry no token;
// a writer's grant may overlap none of them, and writers' tokens still
// increase across the reads between them.
func TestChecker_sharedReads(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	read := func(from, to int) Grant {
		return Grant{Name: "rw", Owner: "readers", Shared: true, Acquired: at(from), Released: at(to), Until: at(to + 100)}
	}
	write := func(owner string, token uint64, from, to int) Grant {
		return Grant{Name: "rw", Owner: owner, Token: token, Acquired: at(from), Released: at(to), Until: at(to + 100)}
	}
	c := New()
	for _, g := range []Grant{write("w1", 5, 0, 10), read(10, 40), read(15, 30), read(20, 50), write("w2", 8, 50, 60), read(60, 70)} {
		c.Record(g)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("overlapping reads between writes: %v", err)
	}
	c.Record(write("w3", 7, 45, 48)) // inside the read 20..50
	c.Record(write("w4", 4, 80, 90)) // a token lower than w2's, after a read
	violations := c.Violations()
	if len(violations) != 2 || violations[0].Reason != "overlapping grants" || violations[0].Second.Owner != "w3" ||
		violations[1].Reason != "fencing token did not increase" || violations[1].Second.Owner != "w4" {
		t.Fatalf("violations %v; want w3 overlapping a read, then w4's token", violations)
	}
}
