/* kiln_exit.h - the exit statuses of every kiln command (`kiln help
 * exit-codes` lists them for users). */
#ifndef KILN_EXIT_H
#define KILN_EXIT_H

#define KILN_EXIT_OK 0
#define KILN_EXIT_FAIL 1        /* verdict fail or suspect */
#define KILN_EXIT_BAD_INPUT 2
#define KILN_EXIT_INTERNAL 3
#define KILN_EXIT_INTERRUPTED 130   /* Ctrl-C (SIGINT) or SIGTERM: stopped, resumable */

#endif
