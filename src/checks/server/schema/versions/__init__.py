"""One file per schema revision, oldest first: 0001 is the schema `checks serve` first shipped."""
