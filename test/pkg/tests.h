/* tests.h — divan as an installed service (test_pkg.c): the Debian
 * package, its unit, make install and the shipped local.ini. */
#define PKG_TESTS(X)           \
  X(pkg_deb, 180)              \
  X(pkg_make_install, 120)     \
  X(pkg_default_config, 120)
