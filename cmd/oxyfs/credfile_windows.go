package main

import "os"

// readPrivateFile reads path (Windows: its ACL decides who reads it).
func readPrivateFile(path string) ([]byte, error) { return os.ReadFile(path) }
