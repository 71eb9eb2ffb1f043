"""The transforms, each an interpreter of `bind`."""
