/* A fixture for test/lint: a local that shadows another (gcc -Wshadow). */
int lint_fixture(int a);
int lint_fixture(int a)
{
	int r = a;

	if (a > 1) {
		int r = a * 2;

		return r;
	}
	return r;
}
