/* report_html.h - `kiln report`'s page: one self-contained HTML file
 * (inline CSS and SVG drawn here, no scripts, no external resources) about
 * one or more search runs. */
#ifndef KILN_REPORT_HTML_H
#define KILN_REPORT_HTML_H

#include <sqlite3.h>
#include <stdio.h>

#include "review.h"

/* Write the page for runs (loaded with kiln_rv_run_load); db is read for
 * the kept kernels' verdicts and the lessons tables when they exist. With
 * across (`report --task`), a table of the best kept kernel per visible
 * shape over all the runs comes first. Returns 0, or -1 on a write error. */
int kiln_report_html(FILE *out, sqlite3 *db, const char *title, const kiln_rv_run *runs,
                     int nruns, int across);

/* Text from the database or a model, safe inside HTML text and attribute
 * values. ':' is escaped too, so that no URL appears in the page's source. */
void kiln_html_escape(FILE *out, const char *s);

#endif
