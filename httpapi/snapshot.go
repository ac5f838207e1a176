package httpapi

import (
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/apprun/apprun/engine"
)

// SnapshotSeqHeader names, on a read-model snapshot, the log sequence
// through which the copy applied the log: a live audit replays the log
// that far and compares.
const SnapshotSeqHeader = "Apprun-Applied-Seq"

// readModelSnapshot handles GET /admin/v1/read-models/snapshot: a
// consistent copy of this node's read models (a bbolt file), once they
// have caught up with every write made before the request, so that a
// checkpoint kept from before is inside it. `apprun audit --node`
// compares it with the log, and never opens the file the node holds. The
// copy holds everything the read models do (key hashes, emails): admin
// only, and logged as an admin action.
func (a *API) readModelSnapshot(w http.ResponseWriter, r *http.Request, ad admin) {
	if err := a.cfg.Reads.Failed(); err != nil {
		// Their copy would not be the log's fold: say why, as /readyz does.
		writeJSON(w, http.StatusServiceUnavailable, envelope{errorBody{Code: engine.CodeInternal, Message: readsStopped(err)}})
		return
	}
	head, err := a.cfg.Engine.LogHead(r.Context())
	if err == nil {
		err = a.awaitRead(r.Context(), head)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	dir, err := os.MkdirTemp("", "apprun-snapshot-")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer os.RemoveAll(dir)
	path := dir + "/projections.db"
	applied, err := a.cfg.Reads.Snapshot(path)
	var f *os.File
	if err == nil {
		f, err = os.Open(path)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.adminDid(ad, "read_model_snapshot", applied, "bytes", info.Size())
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(info.Size(), 10))
	h.Set("Cache-Control", "no-store")
	h.Set(SnapshotSeqHeader, strconv.FormatUint(applied, 10))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f)
}
