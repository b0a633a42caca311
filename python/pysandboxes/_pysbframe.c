/* _pysbframe.c - the partial-mode frame transport, both ends.
 *
 * It owns the wire format between a partial-mode parent and its worker on
 * their inherited socketpair: a frame is a 4-byte big-endian payload length,
 * then the payload. It moves frames with the GIL released, through partial
 * transfers, EINTR (the caller's signal handlers run, and may end the call)
 * and EAGAIN (poll until a CLOCK_MONOTONIC deadline, time.monotonic()'s
 * clock), and tells apart the ways a transfer ends short: Closed (the other
 * end is gone), Timeout, Garbled (a header over the caller's limit). It keeps
 * no state between calls: it reads exactly a header, then exactly a payload,
 * so nothing is read ahead that a later call could lose. It never decodes a
 * payload (_partial.py and _unpickle.py do) and never closes the descriptor.
 * It is built once against the limited API of CPython 3.9 (one .abi3.so for
 * every CPython from 3.9 on) and must use nothing outside it.
 */
#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#define FRAME_HEADER 4
#define FRAME_MAX UINT32_MAX

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
"recv(fd, deadline, limit) -> bytes\n\n"
"Read one frame from the socket fd and return its payload. deadline is a\n"
"time.monotonic() value or None; limit is the largest payload accepted,\n"
"or None. Raises Closed at end of file, Timeout when the deadline passes,\n"
"Garbled for a header over limit (nothing of the payload is read).");

static PyObject *frame_recv(PyObject *self, PyObject *args)
{
	PyObject *deadline, *limit_obj, *payload;
	unsigned char hdr[FRAME_HEADER];
	struct io io = { 0 };
	long long limit = FRAME_MAX;
	uint32_t size;

	if (!PyArg_ParseTuple(args, "iOO:recv", &io.fd, &deadline, &limit_obj))
		return NULL;
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
	if (read_frame_part(&io, (char *)hdr, sizeof(hdr)) < 0)
		return NULL;
	size = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	       (uint32_t)hdr[2] << 8 | hdr[3];
	if (size > limit) {
		PyErr_Format(garbled_error,
			     "the sandbox sent a frame of %lld bytes, over the "
			     "limit of %lld bytes", (long long)size, limit);
		return NULL;
	}
	/* filled in place before anyone else can see it */
	payload = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
	if (!payload)
		return NULL;
	if (size && read_frame_part(&io, PyBytes_AsString(payload), size) < 0) {
		Py_DECREF(payload);
		return NULL;
	}
	return payload;
}

PyDoc_STRVAR(send_doc,
"send(fd, buffers, deadline)\n\n"
"Write one frame to the socket fd: the header, then the buffers (a\n"
"sequence of bytes-like objects) with sendmsg, not joined. deadline is a\n"
"time.monotonic() value or None. Raises Closed when the other end is gone,\n"
"Timeout when the deadline passes (the stream is then out of step).");

static PyObject *frame_send(PyObject *self, PyObject *args)
{
	PyObject *buffers, *deadline, **held = NULL, *ret = NULL;
	unsigned char hdr[FRAME_HEADER];
	struct iovec *iov = NULL, *cur;
	struct io io = { 0 };
	Py_ssize_t count, i, nheld = 0;
	size_t total = 0, left;
	enum io_status st;

	if (!PyArg_ParseTuple(args, "iOO:send", &io.fd, &buffers, &deadline))
		return NULL;
	if (parse_deadline(&io, deadline) < 0)
		return NULL;
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
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof(hdr);
	cur = iov;
	left = (size_t)count + 1;
	do {
		Py_BEGIN_ALLOW_THREADS
		st = write_all(&io, &cur, &left);
		Py_END_ALLOW_THREADS
		if (io_error(&io, st) < 0)
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

static PyMethodDef frame_methods[] = {
	{ "recv", frame_recv, METH_VARARGS, recv_doc },
	{ "send", frame_send, METH_VARARGS, send_doc },
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
	    PyModule_AddIntConstant(mod, "LIMITED_API", Py_LIMITED_API) < 0) {
		Py_DECREF(mod);
		return NULL;
	}
	return mod;
}
