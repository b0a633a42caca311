/* _pysbframe.c - the partial-mode frame transport, both ends.
 *
 * It owns the wire format between a partial-mode parent and its worker on
 * their inherited socketpair: a frame is a 4-byte big-endian payload length,
 * then the payload. A request's payload starts with the call's id (8 random
 * bytes the parent draws per call); every reply's payload starts with the
 * same id and a kind byte. The worker's end keeps the socket and the id of
 * the call in flight here, in C: the id never becomes a Python object in the
 * worker, reply() stamps it only from the thread that took the request, and
 * the final reply of a call forgets it, so bytes written on the socket by
 * any other means, or after the call, carry no valid id and the parent ends
 * the worker (_partial.py). It also exports the result channel's pre-scan
 * (src/partial/prescan.c, compiled in) to the parent's _unpickle.py.
 *
 * It moves frames with the GIL released, through partial transfers, EINTR
 * (the caller's signal handlers run, and may end the call) and EAGAIN (poll
 * until a CLOCK_MONOTONIC deadline, time.monotonic()'s clock), and tells
 * apart the ways a transfer ends short: Closed (the other end is gone),
 * Timeout, Garbled (a header over the caller's limit). Beyond the worker's
 * socket and call id it keeps no state: it reads exactly a header, then
 * exactly a payload, so nothing is read ahead that a later call could lose.
 * It never decodes a payload (_partial.py and _unpickle.py do) and never
 * closes the descriptor.
 * It is built once against the limited API of CPython 3.9 (one .abi3.so for
 * every CPython from 3.9 on) and must use nothing outside it.
 */
#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include "prescan.h"

#define FRAME_HEADER 4
#define FRAME_MAX UINT32_MAX
#define CALL_ID 8

/* The worker's end (bind(), next_request(), reply()): one socket and one
 * call in flight per process. */
static int bound_fd = -1;
static bool call_open;
static unsigned char call_id[CALL_ID];
static unsigned long call_thread;
/* isolated calls: what the forked child did with the call, in a page it
 * shares with the worker (the child may die without a word) */
enum { CHILD_SILENT, CHILD_REPLIED, CHILD_LOST };
static volatile unsigned char *child_reply;
/* The function's code runs in this process too (its module is imported
 * here, and a shared worker runs the calls here) and reaches this module
 * in sys.modules: fork_call() and reap() serve the worker's own isolated
 * calls only. The worker says once, after the init request and before any
 * code of the program runs, whether it forks (set_isolated()); a worker
 * has one child of fork_call() at a time, its child none, and reap()
 * takes that child only (it kills the child's process group: any other
 * pid would be a signal to a process group outside the sandbox). */
enum { ISOLATED_UNSET, ISOLATED_NO, ISOLATED_YES };
static int isolated_mode = ISOLATED_UNSET;
static unsigned long requests_read;
static pid_t forked_child;
/* one frame at a time on the socket: write_frame() releases the GIL in the
 * middle of a frame, and a function's threads print at the same time */
static pthread_mutex_t reply_lock = PTHREAD_MUTEX_INITIALIZER;

static PyObject *closed_error;
static PyObject *timeout_error;
static PyObject *garbled_error;

enum io_status {
	IO_DONE,
	IO_CLOSED,
	IO_TIMEOUT,
	IO_EINTR,
	IO_ERRNO,
};

struct io {
	int fd;
	bool has_deadline;
	double deadline; /* CLOCK_MONOTONIC seconds */
	int err;         /* errno of IO_ERRNO */
};

static double monotonic_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait until fd is ready for events or the deadline passes. Runs without
 * the GIL. A hang-up counts as ready: the next transfer reports it. */
static enum io_status wait_fd(struct io *io, short events)
{
	struct pollfd pfd = { .fd = io->fd, .events = events };
	struct timespec ts, *tsp = NULL;
	int r;

	if (io->has_deadline) {
		double left = io->deadline - monotonic_now();

		if (left < 0)
			left = 0;
		else if (!(left < 1e9)) /* NaN, or too far for time_t */
			left = 1e9;
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		tsp = &ts;
	}
	r = ppoll(&pfd, 1, tsp, NULL);
	if (r > 0)
		return IO_DONE;
	if (r == 0)
		return IO_TIMEOUT;
	if (errno == EINTR)
		return IO_EINTR;
	io->err = errno;
	return IO_ERRNO;
}

/* Read until *done == len. Runs without the GIL; *done says how far it got
 * when it returns early (EINTR), so that the caller can resume. No busy
 * poll before sleeping in ppoll(): retrying recv() for 20 or 50 us first
 * made a trivial call slower on the bench machine (63 and 124 us against
 * 21 us: the spinning end takes the CPU the other end needs). */
static enum io_status read_all(struct io *io, char *buf, size_t len,
			       size_t *done)
{
	enum io_status st;
	ssize_t n;

	while (*done < len) {
		n = recv(io->fd, buf + *done, len - *done, MSG_DONTWAIT);
		if (n > 0) {
			*done += (size_t)n;
			continue;
		}
		if (n == 0)
			return IO_CLOSED;
		if (errno == EINTR)
			return IO_EINTR;
		if (errno == ECONNRESET)
			return IO_CLOSED;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			io->err = errno;
			return IO_ERRNO;
		}
		st = wait_fd(io, POLLIN);
		if (st != IO_DONE)
			return st;
	}
	return IO_DONE;
}

/* Drop n sent bytes from the front of the iovec array. */
static void advance(struct iovec **iovp, size_t *niovp, size_t n)
{
	struct iovec *iov = *iovp;
	size_t niov = *niovp;

	while (niov && n >= iov->iov_len) {
		n -= iov->iov_len;
		iov++;
		niov--;
	}
	if (n) {
		iov->iov_base = (char *)iov->iov_base + n;
		iov->iov_len -= n;
	}
	*iovp = iov;
	*niovp = niov;
}

/* Send the iovecs, IOV_MAX at a time. Runs without the GIL; *iovp and
 * *niovp say what is left when it returns early. MSG_NOSIGNAL: a peer that
 * is gone is an EPIPE here, never a SIGPIPE for the whole process. */
static enum io_status write_all(struct io *io, struct iovec **iovp,
				size_t *niovp)
{
	struct msghdr msg = { 0 };
	enum io_status st;
	ssize_t n;

	advance(iovp, niovp, 0); /* skip empty buffers in front */
	while (*niovp) {
		msg.msg_iov = *iovp;
		msg.msg_iovlen = *niovp < IOV_MAX ? *niovp : IOV_MAX;
		n = sendmsg(io->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n >= 0) {
			advance(iovp, niovp, (size_t)n);
			continue;
		}
		if (errno == EINTR)
			return IO_EINTR;
		if (errno == EPIPE || errno == ECONNRESET)
			return IO_CLOSED;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			io->err = errno;
			return IO_ERRNO;
		}
		st = wait_fd(io, POLLOUT);
		if (st != IO_DONE)
			return st;
	}
	return IO_DONE;
}

/* -1 with the exception set for a status other than IO_DONE and IO_EINTR;
 * for IO_EINTR the signal handlers run (PEP 475): 0 to retry, or -1 when
 * one raised. */
static int io_error(struct io *io, enum io_status st)
{
	switch (st) {
	case IO_DONE:
		return 0;
	case IO_EINTR:
		return PyErr_CheckSignals() < 0 ? -1 : 0;
	case IO_CLOSED:
		PyErr_SetString(closed_error,
				"the other end closed the connection");
		return -1;
	case IO_TIMEOUT:
		PyErr_SetString(timeout_error,
				"the deadline passed before the frame was "
				"complete");
		return -1;
	case IO_ERRNO:
		errno = io->err;
		PyErr_SetFromErrno(PyExc_OSError);
		return -1;
	}
	return -1;
}

static int read_frame_part(struct io *io, char *buf, size_t len)
{
	size_t done = 0;
	enum io_status st;

	do {
		Py_BEGIN_ALLOW_THREADS
		st = read_all(io, buf, len, &done);
		Py_END_ALLOW_THREADS
		if (io_error(io, st) < 0)
			return -1;
	} while (st != IO_DONE);
	return 0;
}

/* deadline: None (wait for ever) or time.monotonic() seconds. */
static int parse_deadline(struct io *io, PyObject *deadline)
{
	io->has_deadline = deadline != Py_None;
	if (io->has_deadline) {
		io->deadline = PyFloat_AsDouble(deadline);
		if (io->deadline == -1.0 && PyErr_Occurred())
			return -1;
	}
	return 0;
}

PyDoc_STRVAR(recv_doc,
"recv(fd, deadline, limit, head=0, spare=None) -> bytes | (bytes, rest)\n\n"
"Read one frame from the socket fd and return its payload. deadline is a\n"
"time.monotonic() value or None; limit is the largest payload accepted,\n"
"or None. With head > 0, the payload's first head bytes come apart from\n"
"the rest, (head, rest), each read in place (no copy of a large rest).\n"
"rest is bytes, or, when a bytearray spare is given and the rest is from\n"
"64 KiB to 8 MiB, its length: it was read into spare[:length] (spare\n"
"grows to fit, never shrinks).\n"
"Raises Closed at end of file, Timeout when the deadline passes, Garbled\n"
"for a header over limit (nothing of the payload is read) or a payload\n"
"shorter than head.");

/* A frame's header, then its first headlen bytes into head; *rest is the
 * size of the payload that follows (nothing of it is read). A frame over
 * limit, or shorter than headlen, is Garbled. */
static int read_frame_head(struct io *io, long long limit,
			   unsigned char *head, size_t headlen, size_t *rest)
{
	unsigned char hdr[FRAME_HEADER];
	uint32_t size;

	if (read_frame_part(io, (char *)hdr, sizeof(hdr)) < 0)
		return -1;
	size = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	       (uint32_t)hdr[2] << 8 | hdr[3];
	if (size > limit) {
		PyErr_Format(garbled_error,
			     "the sandbox sent a frame of %lld bytes, over the "
			     "limit of %lld bytes", (long long)size, limit);
		return -1;
	}
	if (size < headlen) {
		PyErr_Format(garbled_error,
			     "a frame of %lld bytes, too short for its "
			     "%lld-byte call id", (long long)size,
			     (long long)headlen);
		return -1;
	}
	if (headlen && read_frame_part(io, (char *)head, headlen) < 0)
		return -1;
	*rest = size - headlen;
	return 0;
}

/* The size bytes of a payload whose head was read, into a new bytes
 * object: each byte is written once, where it stays (a 1 MB argument is not
 * copied again to drop the id). */
static PyObject *read_payload(struct io *io, size_t size)
{
	/* filled in place before anyone else can see it */
	PyObject *payload = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);

	if (!payload)
		return NULL;
	if (size && read_frame_part(io, PyBytes_AsString(payload), size) < 0) {
		Py_DECREF(payload);
		return NULL;
	}
	return payload;
}

/* Payloads from SPARE_MIN to SPARE_MAX bytes go into the caller's spare
 * bytearray, kept from call to call: fresh pages for each large frame
 * cost a page fault each (10 to 35 us in the bench machine's VM: 240 of
 * them were most of a 1 MB round trip). Smaller ones stay bytes; larger
 * ones are not worth keeping the memory for. */
#define SPARE_MIN (64 << 10)
#define SPARE_MAX (8 << 20)

static PyObject *frame_recv(PyObject *self, PyObject *args)
{
	PyObject *deadline, *limit_obj, *spare = Py_None, *rest;
	struct io io = { 0 };
	long long limit = FRAME_MAX;
	unsigned char head[CALL_ID + 1];
	int headlen = 0;
	size_t size;

	if (!PyArg_ParseTuple(args, "iOO|iO:recv", &io.fd, &deadline,
			      &limit_obj, &headlen, &spare))
		return NULL;
	if (headlen < 0 || (size_t)headlen > sizeof(head)) {
		PyErr_Format(PyExc_ValueError, "head must be 0 to %d",
			     (int)sizeof(head));
		return NULL;
	}
	if (spare != Py_None && (!headlen || !PyByteArray_Check(spare))) {
		PyErr_SetString(PyExc_TypeError,
				"spare must be a bytearray, with a head");
		return NULL;
	}
	if (parse_deadline(&io, deadline) < 0)
		return NULL;
	if (limit_obj != Py_None) {
		limit = PyLong_AsLongLong(limit_obj);
		if (limit == -1 && PyErr_Occurred())
			return NULL;
		if (limit < 0) {
			PyErr_SetString(PyExc_ValueError,
					"limit must be >= 0 or None");
			return NULL;
		}
	}
	if (read_frame_head(&io, limit, head, (size_t)headlen, &size) < 0)
		return NULL;
	if (spare == Py_None || size < SPARE_MIN || size > SPARE_MAX) {
		rest = read_payload(&io, size);
	} else {
		/* only the thread that holds the worker uses its spare */
		if ((size_t)PyByteArray_Size(spare) < size &&
		    PyByteArray_Resize(spare, (Py_ssize_t)size) < 0)
			return NULL;
		if (read_frame_part(&io, PyByteArray_AsString(spare), size) < 0)
			return NULL;
		rest = PyLong_FromSize_t(size);
	}
	if (!rest || !headlen)
		return rest;
	return Py_BuildValue("(y#N)", (const char *)head, (Py_ssize_t)headlen,
			     rest);
}

PyDoc_STRVAR(send_doc,
"send(fd, buffers, deadline)\n\n"
"Write one frame to the socket fd: the header, then the buffers (a\n"
"sequence of bytes-like objects) with sendmsg, not joined. deadline is a\n"
"time.monotonic() value or None. Raises Closed when the other end is gone,\n"
"Timeout when the deadline passes (the stream is then out of step).");

/* One frame: the header, 'plen' bytes of prefix, then the buffers. */
static PyObject *write_frame(struct io *io, const unsigned char *prefix,
			     size_t plen, PyObject *buffers)
{
	PyObject **held = NULL, *ret = NULL;
	unsigned char hdr[FRAME_HEADER + CALL_ID + 1];
	struct iovec *iov = NULL, *cur;
	Py_ssize_t count, i, nheld = 0;
	size_t total = plen, left;
	enum io_status st;

	count = PySequence_Size(buffers);
	if (count < 0)
		return NULL;
	held = PyMem_Calloc((size_t)count + 1, sizeof(*held));
	iov = PyMem_Calloc((size_t)count + 1, sizeof(*iov));
	if (!held || !iov) {
		PyErr_NoMemory();
		goto out;
	}
	for (i = 0; i < count; i++) {
		PyObject *item = PySequence_GetItem(buffers, i);
		char *data;
		Py_ssize_t len;

		if (!item)
			goto out;
		/* Only a bytes object is immutable: a bytearray could be
		 * resized by another thread while the GIL is released, and
		 * the 3.9 limited API has no buffer protocol to pin it, so
		 * anything else is copied (the pickler hands over bytes but
		 * for bytearray and PickleBuffer values). */
		if (!PyBytes_Check(item)) {
			PyObject *copy = PyBytes_FromObject(item);

			Py_DECREF(item);
			if (!copy)
				goto out;
			item = copy;
		}
		held[nheld++] = item;
		if (PyBytes_AsStringAndSize(item, &data, &len) < 0)
			goto out;
		iov[i + 1].iov_base = data;
		iov[i + 1].iov_len = (size_t)len;
		/* compared before the sum: size_t is 32 bits on some builds */
		if ((uint64_t)len > (uint64_t)FRAME_MAX - total) {
			PyErr_Format(PyExc_OverflowError,
				     "a frame holds at most %lld bytes",
				     (long long)FRAME_MAX);
			goto out;
		}
		total += (size_t)len;
	}
	hdr[0] = (unsigned char)(total >> 24);
	hdr[1] = (unsigned char)(total >> 16);
	hdr[2] = (unsigned char)(total >> 8);
	hdr[3] = (unsigned char)total;
	if (plen)
		memcpy(hdr + FRAME_HEADER, prefix, plen);
	iov[0].iov_base = hdr;
	iov[0].iov_len = FRAME_HEADER + plen;
	cur = iov;
	left = (size_t)count + 1;
	do {
		Py_BEGIN_ALLOW_THREADS
		st = write_all(io, &cur, &left);
		Py_END_ALLOW_THREADS
		if (io_error(io, st) < 0)
			goto out;
	} while (st != IO_DONE);
	Py_INCREF(Py_None);
	ret = Py_None;
out:
	for (i = 0; i < nheld; i++)
		Py_DECREF(held[i]);
	PyMem_Free(held);
	PyMem_Free(iov);
	return ret;
}

static PyObject *frame_send(PyObject *self, PyObject *args)
{
	PyObject *buffers, *deadline;
	struct io io = { 0 };

	if (!PyArg_ParseTuple(args, "iOO:send", &io.fd, &buffers, &deadline))
		return NULL;
	if (parse_deadline(&io, deadline) < 0)
		return NULL;
	return write_frame(&io, NULL, 0, buffers);
}

/* ---- the worker's end ---- */

PyDoc_STRVAR(bind_doc,
"bind(fd)\n\n"
"The worker's socket, kept here for next_request() and reply(). Once.");

static PyObject *frame_bind(PyObject *self, PyObject *args)
{
	int fd;

	if (!PyArg_ParseTuple(args, "i:bind", &fd))
		return NULL;
	if (bound_fd >= 0 || fd < 0) {
		PyErr_SetString(PyExc_ValueError, "bind(): already bound");
		return NULL;
	}
	bound_fd = fd;
#if defined(M_TRIM_THRESHOLD) && defined(M_MMAP_THRESHOLD)
	/* The worker is ours: keep freed memory for the next call instead of
	 * giving it back at each free. A 1 MB argument and result otherwise
	 * cost fresh pages each call, and a page fault costs 10 to 25 us on
	 * the bench machine (a VM): 240 faults were most of a 1 MB round
	 * trip. The parent, the user's process, keeps its own settings. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
	Py_RETURN_NONE;
}

PyDoc_STRVAR(next_request_doc,
"next_request() -> bytes\n\n"
"The next request's payload without its call id, which is kept here for\n"
"reply(), for this thread. Raises Closed when the parent has gone,\n"
"Garbled for a request shorter than an id.");

static PyObject *frame_next_request(PyObject *self, PyObject *unused)
{
	struct io io = { .fd = bound_fd };
	PyObject *payload;
	size_t size;

	call_open = false;
	/* the id goes straight where reply() takes it from; a frame shorter
	 * than an id is Garbled and the call stays closed */
	if (read_frame_head(&io, FRAME_MAX, call_id, CALL_ID, &size) < 0)
		return NULL;
	payload = read_payload(&io, size);
	if (!payload)
		return NULL;
	call_thread = PyThread_get_thread_ident();
	call_open = true;
	requests_read++;
	return payload;
}

PyDoc_STRVAR(set_isolated_doc,
"set_isolated(isolated)\n\n"
"Whether this worker runs each call in a child of fork_call(): said once,\n"
"right after the init request was read (before any code of the program\n"
"runs). fork_call() is refused otherwise.");

static PyObject *frame_set_isolated(PyObject *self, PyObject *args)
{
	int on;

	if (!PyArg_ParseTuple(args, "p:set_isolated", &on))
		return NULL;
	if (isolated_mode != ISOLATED_UNSET || requests_read != 1) {
		PyErr_SetString(PyExc_RuntimeError,
				"set_isolated(): the worker said it already");
		return NULL;
	}
	isolated_mode = on ? ISOLATED_YES : ISOLATED_NO;
	Py_RETURN_NONE;
}

PyDoc_STRVAR(reply_doc,
"reply(kind, buffers, final)\n\n"
"Send one reply frame of the call in flight: its id, the kind byte, then\n"
"the buffers. Only the thread that took the request may send the final\n"
"one (any thread may send output while the call is open); after it the\n"
"call is closed and reply() raises Closed until the next request.");

static PyObject *frame_reply(PyObject *self, PyObject *args)
{
	unsigned char prefix[CALL_ID + 1];
	struct io io = { .fd = bound_fd };
	PyObject *buffers, *ret;
	unsigned char kind, before;
	int final;

	if (!PyArg_ParseTuple(args, "bOp:reply", &kind, &buffers, &final))
		return NULL;
	if (!call_open ||
	    (final && call_thread != PyThread_get_thread_ident())) {
		PyErr_SetString(closed_error, "no call in flight on this "
					      "thread");
		return NULL;
	}
	memcpy(prefix, call_id, CALL_ID);
	prefix[CALL_ID] = kind;
	if (final)
		call_open = false;
	/* an isolated child that dies while it writes leaves half a frame */
	Py_BEGIN_ALLOW_THREADS
	pthread_mutex_lock(&reply_lock);
	Py_END_ALLOW_THREADS
	before = child_reply ? *child_reply : CHILD_SILENT;
	if (child_reply)
		*child_reply = CHILD_LOST;
	ret = write_frame(&io, prefix, sizeof(prefix), buffers);
	pthread_mutex_unlock(&reply_lock);
	if (!ret)
		call_open = false; /* half a frame: the stream is lost */
	if (child_reply)
		*child_reply = !ret ? CHILD_LOST : final ? CHILD_REPLIED :
		before;
	return ret;
}

PyDoc_STRVAR(fork_call_doc,
"fork_call() -> pid\n\n"
"Fork the worker for one isolated call: 0 in the child, which inherits\n"
"the call in flight, leads a process group of its own and dies with the\n"
"worker; the child's pid in the worker, whose call is closed (only the\n"
"child replies). Not an os.fork(): no audit event, no at-fork hooks of\n"
"the function's code (none has run in the worker).");

static PyObject *frame_fork_call(PyObject *self, PyObject *unused)
{
	pid_t pid;

	if (isolated_mode != ISOLATED_YES || forked_child) {
		PyErr_SetString(PyExc_RuntimeError,
				"fork_call(): only the worker of isolated "
				"calls forks, one call at a time");
		return NULL;
	}
	if (!child_reply) {
		void *page = mmap(NULL, 1, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (page == MAP_FAILED)
			return PyErr_SetFromErrno(PyExc_OSError);
		child_reply = page;
	}
	*child_reply = CHILD_SILENT;
	PyOS_BeforeFork();
	pid = fork();
	if (pid == 0) {
		PyOS_AfterFork_Child();
		/* a thread of the worker's may have held it: it is gone */
		pthread_mutex_init(&reply_lock, NULL);
		/* not back into the worker's loop: the worker answers */
		if (setpgid(0, 0) < 0 ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
			_exit(127);
		isolated_mode = ISOLATED_NO; /* the call's process forks none */
		return PyLong_FromLong(0);
	}
	PyOS_AfterFork_Parent();
	if (pid < 0)
		return PyErr_SetFromErrno(PyExc_OSError);
	forked_child = pid;
	call_open = false;
	return PyLong_FromLong((long)pid);
}

PyDoc_STRVAR(reap_doc,
"reap(pid) -> (replied, status)\n\n"
"Wait for the child of fork_call(), then kill what is left of its process\n"
"group: nothing a call started outlives it. replied: 1 when the child\n"
"sent the call's final reply; 0 when it sent none (the call is open again\n"
"for this thread: the worker answers it); -1 when it died in the middle\n"
"of a frame (the stream is lost). status: its wait status.");

static PyObject *frame_reap(PyObject *self, PyObject *args)
{
	int pid, status;
	pid_t r;

	if (!PyArg_ParseTuple(args, "i:reap", &pid))
		return NULL;
	if (!forked_child || pid != forked_child || !child_reply) {
		PyErr_SetString(PyExc_ValueError,
				"reap(): not the child of fork_call()");
		return NULL;
	}
	forked_child = 0;
	do {
		Py_BEGIN_ALLOW_THREADS
		r = waitpid(pid, &status, 0);
		Py_END_ALLOW_THREADS
		if (r < 0 && errno == EINTR && PyErr_CheckSignals() < 0)
			return NULL;
	} while (r < 0 && errno == EINTR);
	kill(-pid, SIGKILL);
	/* the group's members are our grandchildren: init reaps them */
	if (*child_reply == CHILD_SILENT) {
		call_open = true;
		call_thread = PyThread_get_thread_ident();
	}
	return Py_BuildValue("(ii)", *child_reply == CHILD_REPLIED ? 1 :
			     *child_reply == CHILD_LOST ? -1 : 0,
			     r < 0 ? -1 : status);
}

/* ---- the result channel's pre-scan ---- */

PyDoc_STRVAR(prescan_doc,
"prescan(data, offset, data_only, limits, end=-1)\n"
"    -> flags or (garbled, message)\n\n"
"Scan the result stream data[offset:end] (bytes or bytearray; end -1 is\n"
"the end of data) without executing it (src/partial/prescan.c).\n"
"limits: (max_bytes, max_opcodes, max_memo, max_depth, max_work).\n"
"An int when it passes, the bits PRESCAN_NO_CLASS and PRESCAN_TREE\n"
"(prescan.h), else a tuple: whether it is no pickle at all and why.");

#define PRESCAN_KEEP_GIL 4096

static PyObject *frame_prescan(PyObject *self, PyObject *args)
{
	struct sb_prescan_limits lim;
	struct sb_prescan_error err;
	PyObject *data;
	char *buf;
	Py_ssize_t len, offset;
	int data_only, r;

	Py_ssize_t end = -1;
	PyThreadState *ts;
	unsigned flags;
	bool shared;

	if (!PyArg_ParseTuple(args, "Onp(LLLLL)|n:prescan", &data, &offset,
			      &data_only, &lim.max_bytes, &lim.max_opcodes,
			      &lim.max_memo, &lim.max_depth, &lim.max_work,
			      &end))
		return NULL;
	shared = PyByteArray_Check(data);
	if (shared) {
		buf = PyByteArray_AsString(data);
		len = PyByteArray_Size(data);
	} else if (PyBytes_AsStringAndSize(data, &buf, &len) < 0) {
		return NULL;
	}
	if (end >= 0 && end < len)
		len = end;
	if (offset < 0 || offset > len) {
		PyErr_SetString(PyExc_ValueError, "offset out of the data");
		return NULL;
	}
	buf += offset;
	len -= offset;
	/* bytes are immutable: the scan of a large one runs without the
	 * GIL; a bytearray (the pool's spare) could change under it, so it
	 * keeps the GIL, and so does a small one (the scan takes less than
	 * handing the GIL over) */
	ts = shared || len < PRESCAN_KEEP_GIL ? NULL : PyEval_SaveThread();
	r = sb_prescan_flags((const unsigned char *)buf, (size_t)len, &lim,
			     data_only ? SB_PRESCAN_DATA : SB_PRESCAN_SHAPE,
			     &err, &flags);
	if (ts)
		PyEval_RestoreThread(ts);
	if (r == 0)
		return PyLong_FromUnsignedLong(flags);
	return Py_BuildValue("(Ns)", PyBool_FromLong(err.garbled),
			     err.message);
}

PyDoc_STRVAR(value_classes_doc,
"value_classes() -> tuple of (module, name)\n\n"
"The classes data-only mode admits (the table of src/partial/prescan.c).");

static PyObject *frame_value_classes(PyObject *self, PyObject *unused)
{
	const char *module, *name;
	PyObject *list = PyList_New(0), *item, *ret;
	size_t i;

	if (!list)
		return NULL;
	for (i = 0; sb_prescan_class(i, &module, &name); i++) {
		item = Py_BuildValue("(ss)", module, name);
		if (!item || PyList_Append(list, item) < 0) {
			Py_XDECREF(item);
			Py_DECREF(list);
			return NULL;
		}
		Py_DECREF(item);
	}
	ret = PyList_AsTuple(list);
	Py_DECREF(list);
	return ret;
}

static PyMethodDef frame_methods[] = {
	{ "recv", frame_recv, METH_VARARGS, recv_doc },
	{ "send", frame_send, METH_VARARGS, send_doc },
	{ "bind", frame_bind, METH_VARARGS, bind_doc },
	{ "next_request", frame_next_request, METH_NOARGS, next_request_doc },
	{ "reply", frame_reply, METH_VARARGS, reply_doc },
	{ "set_isolated", frame_set_isolated, METH_VARARGS,
	  set_isolated_doc },
	{ "fork_call", frame_fork_call, METH_NOARGS, fork_call_doc },
	{ "reap", frame_reap, METH_VARARGS, reap_doc },
	{ "prescan", frame_prescan, METH_VARARGS, prescan_doc },
	{ "value_classes", frame_value_classes, METH_NOARGS,
	  value_classes_doc },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef frame_module = {
	PyModuleDef_HEAD_INIT,
	"_pysbframe",
	"The partial-mode frame transport (see _pysbframe.c).",
	-1,
	frame_methods,
	NULL, NULL, NULL, NULL,
};

static int add_error(PyObject *mod, PyObject **slot, const char *name,
		     PyObject *base)
{
	char qual[64];

	snprintf(qual, sizeof(qual), "pysandboxes._pysbframe.%s", name);
	*slot = PyErr_NewException(qual, base, NULL);
	if (!*slot)
		return -1;
	Py_INCREF(*slot); /* the module's reference; ours stays */
	if (PyModule_AddObject(mod, name, *slot) < 0) {
		Py_DECREF(*slot);
		return -1;
	}
	return 0;
}

PyMODINIT_FUNC PyInit__pysbframe(void);

PyMODINIT_FUNC PyInit__pysbframe(void)
{
	PyObject *mod = PyModule_Create(&frame_module);

	if (!mod)
		return NULL;
	if (add_error(mod, &closed_error, "Closed",
		      PyExc_ConnectionError) < 0 ||
	    add_error(mod, &timeout_error, "Timeout", PyExc_TimeoutError) < 0 ||
	    add_error(mod, &garbled_error, "Garbled", PyExc_ValueError) < 0 ||
	    PyModule_AddIntConstant(mod, "LIMITED_API", Py_LIMITED_API) < 0 ||
	    PyModule_AddIntConstant(mod, "CALL_ID", CALL_ID) < 0 ||
	    PyModule_AddIntConstant(mod, "PRESCAN_ABI", SB_PRESCAN_ABI) < 0 ||
	    PyModule_AddIntConstant(mod, "PRESCAN_NO_CLASS",
				    SB_PRESCAN_NO_CLASS) < 0 ||
	    PyModule_AddIntConstant(mod, "PRESCAN_TREE", SB_PRESCAN_TREE) < 0) {
		Py_DECREF(mod);
		return NULL;
	}
	return mod;
}
