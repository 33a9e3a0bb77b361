/* A fixture of test/lint: the sockets layer, calling down into the stack. */
int ts_stack__poll(int frame);
int ts_sock__deliver(int frame);

int ts_sock__deliver(int frame)
{
	return frame > 0 ? ts_stack__poll(frame - 1) : 0;
}
