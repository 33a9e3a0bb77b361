/* A fixture of test/lint: the stack layer, calling nothing above it. */
int ts_stack__poll(int frame);

int ts_stack__poll(int frame)
{
	return frame + 1;
}
