package store

// SlabsMapped is how many buffers of streamed bodies are mapped.
func SlabsMapped() int64 { return slabsMapped.Load() }
