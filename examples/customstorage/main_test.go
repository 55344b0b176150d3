package main

import (
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/storagetest"
)

func TestSliceStorage(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) plantstore.Storage { return &sliceStorage{} })
}
