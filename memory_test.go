package plantstore_test

import (
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/storagetest"
)

func TestMemoryStorage(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) plantstore.Storage {
		return plantstore.NewMemoryStorage()
	})
}
