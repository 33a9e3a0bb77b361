// A fixture for test/lint: clean under the dataplane's C++ lint warnings.
int lint_fixture(int a);
int lint_fixture(int a)
{
	return a > 1 ? a * 2 : a;
}
