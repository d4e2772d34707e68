/* tests.h — the command line's tests (test_cli.c): the `divan` binary's
 * flags, --help and errors, run as a program. */
#define CLI_TESTS(X)                 \
  X(cli_help_lists_every_flag, 240)  \
  X(cli_bad_values, 240)             \
  X(cli_version_and_help, 60)
