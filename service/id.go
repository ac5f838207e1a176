package service

import (
	"github.com/apprun/apprun/engine"
)

// id is newID from the engine's entropy (crypto/rand unless the
// simulation seeds it).
func (e *Service) id(prefix string, n int) string { return engine.IDFrom(e.cfg.Entropy, prefix, n) }

// newRunNo is a run number made now from the engine's entropy.
func (e *Service) newRunNo() string { return engine.RunNoFrom(e.cfg.Entropy, e.now()) }
