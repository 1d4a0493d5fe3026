"""Pure statistics: numbers in, decisions out. No paddle, no database, no files."""
