/* A fixture of test/lint: the stack layer, calling up into the sockets. */
int ts_sock__deliver(int frame);
int ts_stack__poll(int frame);

int ts_stack__poll(int frame)
{
	return ts_sock__deliver(frame);
}
