/* db_rebuild.h - `kiln db rebuild`: a workspace's .kiln/kiln.db made anew
 * from what git holds (docs/search.md, "A database you can lose"): each
 * candidate's verdict note (KILN_VERDICT_NOTES_REF), its commit (parent,
 * message, source) and the refs (the run branches, refs/kiln/archive).
 * The old file is moved aside, never deleted. */
#ifndef KILN_DB_REBUILD_H
#define KILN_DB_REBUILD_H

#include <stdio.h>

#include "kiln_error.h"

/* Rebuild workspace's database, telling out what it rebuilt, where the old
 * file went and what the notes do not hold. A workspace with no verdict
 * notes is bad input (nothing to rebuild from); so is one a search holds. */
int kiln_db_rebuild(const char *workspace, FILE *out, kiln_error *err);

#endif
