//go:build linux

package ptp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// credOOBSize is the room for one SCM_CREDENTIALS control message.
func credOOBSize() int { return unix.CmsgSpace(unix.SizeofUcred) }

// setPassCred asks the kernel for each sender's credentials.
func setPassCred(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1) }); err != nil {
		return err
	}
	return serr
}

// senderPID reads the sender's pid from a message's SCM_CREDENTIALS.
func senderPID(oob []byte) (int32, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, fmt.Errorf("reading the sender's credentials: %w", err)
	}
	for i := range msgs {
		cred, err := unix.ParseUnixCredentials(&msgs[i])
		if err == nil {
			if cred.Pid <= 0 {
				return 0, errors.New("the sender's pid is not visible here")
			}
			return cred.Pid, nil
		}
	}
	return 0, errors.New("no sender credentials")
}

// openReplySocket opens, as an O_PATH descriptor, the socket at path in the root of process pid,
// resolving every link inside that root and following none at the end: anything but a socket is
// refused.
func openReplySocket(procDir string, pid int32, path string) (*os.File, error) {
	rootPath := filepath.Join(procDir, strconv.Itoa(int(pid)), "root")
	root, err := unix.Open(rootPath, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", rootPath, err)
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, strings.TrimLeft(path, "/"), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("opening it in the client's root: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return nil, fmt.Errorf("not a socket (mode %#o)", st.Mode)
	}
	return os.NewFile(uintptr(fd), path), nil
}
