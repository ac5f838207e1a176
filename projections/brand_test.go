package projections_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
)

// An account's brand contexts are listed newest first, as last edited,
// without the deleted ones and without another account's; a store
// rebuilt from the log holds exactly what the live one does.
func TestBrandContextsAreListedPerAccountAndRebuiltTheSame(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	by := ledger.By{Actor: "system:test", Reason: "test"}
	ann, _ := f.eng.OpenAccount(ctx, "ann@example.com", 10, by)
	bob, _ := f.eng.OpenAccount(ctx, "bob@example.com", 10, by)
	var ids []string
	for _, name := range []string{"First", "Second", "Third"} {
		bc, _, err := f.eng.CreateBrandContext(ctx, ann.AccountID, engine.BrandContext{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, bc.ID)
	}
	if _, _, err := f.eng.CreateBrandContext(ctx, bob.AccountID, engine.BrandContext{Name: "Bob's"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.eng.UpdateBrandContext(ctx, ann.AccountID, ids[0], engine.EditAll(engine.BrandContext{Name: "First, edited", Voice: "warm"})); err != nil {
		t.Fatal(err)
	}
	last, err := f.eng.DeleteBrandContext(ctx, ann.AccountID, ids[1])
	if err != nil {
		t.Fatal(err)
	}

	live := f.open(t)
	defer live.Close()
	waitFor(t, live, last)
	list, err := live.BrandContextsOf(ann.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, bc := range list {
		names = append(names, bc.Name+"/"+bc.Voice)
	}
	if want := []string{"Third/", "First, edited/warm"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("Ann's brand contexts %v, want %v (newest first, edited, the deleted one gone)", names, want)
	}
	if _, err := live.BrandContext(ctx, ids[1]); err != port.ErrNotFound {
		t.Fatalf("the deleted brand context: %v, want ErrNotFound", err)
	}
	if bobs, err := live.BrandContextsOf(bob.AccountID); err != nil || len(bobs) != 1 || bobs[0].Name != "Bob's" {
		t.Fatalf("Bob's brand contexts %+v %v", bobs, err)
	}
	want, err := live.Dump()
	if err != nil {
		t.Fatal(err)
	}

	f.path = filepath.Join(t.TempDir(), "rebuilt.db")
	rebuilt := f.open(t)
	defer rebuilt.Close()
	waitFor(t, rebuilt, last)
	got, err := rebuilt.Dump()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"brand_contexts", "account_brand_contexts"} {
		if len(want[b]) != 3 || !reflect.DeepEqual(got[b], want[b]) {
			t.Fatalf("bucket %s: live %v, rebuilt %v (want 3 entries alike)", b, want[b], got[b])
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("the rebuilt read models differ from the live ones")
	}
}
