/* sysfiles.c - the system files C functions read by a fixed name, with no
 * audit event: the account databases of pwd, grp and spwd (glibc's NSS,
 * whose "files" source reads /etc/passwd, /etc/group, /etc/shadow), os's
 * getgrouplist, initgroups and getlogin, and the services and protocols
 * tables of socket (/etc/services, /etc/protocols), and the service names
 * the resolver looks up in /etc/services (sb_sysfiles_services, for
 * net.c's getaddrinfo and getnameinfo), and libuuid's daemon socket and
 * clock file (_uuid).
 * Each call is judged by the file guard (files.c) as a read of its file
 * before it runs, so that `pwd.getpwall()` lists the accounts only where
 * `open("/etc/passwd")` would be allowed: the rules, the refusal, the
 * denial log and learning (expose-ro=/etc/passwd) are the file guard's.
 * Without this the Python layer let these reads through while refusing
 * the same file by open() (under the kernel layer Landlock refused NSS,
 * which then answered "not found").
 * NSS sources other than files (sss, LDAP, systemd's) reach their daemons
 * by socket: judged by the network guard and the kernel layer, not here.
 * The wrappers are installed on the modules when the guard arms (pwd is
 * loaded by the interpreter's own start) and when the import machinery
 * makes them, both through sb_clibs_module_ready (clibs.c).
 */
#include "guard.h"

#include <string.h>
#include <sys/stat.h>

/* One function of a module, and the file it reads. */
struct sysfile_call {
	struct sb_wrap wrap;
	const char *file;
};

static PyObject *sysfile_call(struct sb_wrap *w, PyObject *args,
			      PyObject *kwargs);

#define SERVICES "/etc/services"

#define SYSFILE(mod, name, path)                                        \
	{ .wrap = { .module = mod, .attr = name, .call = sysfile_call }, \
	  .file = path }
#define SOCKFILE(name, path)                                            \
	{ .wrap = { .module = "_socket", .attr = name, .also = "socket", \
		    .call = sysfile_call },                              \
	  .file = path }

static struct sysfile_call calls[] = {
	SYSFILE("pwd", "getpwuid", "/etc/passwd"),
	SYSFILE("pwd", "getpwnam", "/etc/passwd"),
	SYSFILE("pwd", "getpwall", "/etc/passwd"),
	SYSFILE("grp", "getgrgid", "/etc/group"),
	SYSFILE("grp", "getgrnam", "/etc/group"),
	SYSFILE("grp", "getgrall", "/etc/group"),
	SYSFILE("spwd", "getspnam", "/etc/shadow"),
	SYSFILE("spwd", "getspall", "/etc/shadow"),
	/* os's own readers of the account databases */
	{ .wrap = { .module = "posix", .attr = "getgrouplist", .also = "os",
		    .call = sysfile_call },
	  .file = "/etc/group" },
	{ .wrap = { .module = "posix", .attr = "initgroups", .also = "os",
		    .call = sysfile_call },
	  .file = "/etc/group" },
	{ .wrap = { .module = "posix", .attr = "getlogin", .also = "os",
		    .call = sysfile_call },
	  .file = "/etc/passwd" },
	SOCKFILE("getservbyname", SERVICES),
	SOCKFILE("getservbyport", SERVICES),
	SOCKFILE("getprotobyname", "/etc/protocols"),
};

static PyObject *sysfile_call(struct sb_wrap *w, PyObject *args,
			      PyObject *kwargs)
{
	const struct sysfile_call *c = (const struct sysfile_call *)w;

	if (sb_files_check(c->file, -1, false) < 0)
		return NULL;
	return sb_wrap_call_original(w, args, kwargs);
}

int sb_sysfiles_services(void)
{
	return sb_files_check(SERVICES, -1, false);
}

/* _uuid.generate_time_safe (uuid.uuid1, uuid.getnode): libuuid asks the
 * uuidd daemon for a time through its socket, then keeps its clock in
 * /var/lib/libuuid/clock.txt, which it creates: under subprocess a host
 * daemon reached and a file written outside the rules. Judged as writes
 * of those (a socket needs expose-rw=, as connect() to it), each only
 * when its directory is there (else libuuid reaches nothing). */
static PyObject *uuid_call(struct sb_wrap *w, PyObject *args, PyObject *kwargs)
{
	static const char *const reached[][2] = {
		{ "/run/uuidd", "/run/uuidd/request" },
		{ "/var/lib/libuuid", "/var/lib/libuuid/clock.txt" },
	};
	struct stat st;
	size_t i;

	for (i = 0; i < SB_ARRAY_LEN(reached); i++)
		if (stat(reached[i][0], &st) == 0 &&
		    sb_files_check(reached[i][1], -1, true) < 0)
			return NULL;
	return sb_wrap_call_original(w, args, kwargs);
}

static struct sb_wrap uuid_wrap = { .module = "_uuid",
				    .attr = "generate_time_safe",
				    .call = uuid_call };

/* uuid.py keeps its own reference, _generate_time_safe, taken when it
 * was imported: one imported before the guard armed (a .pth file) gets
 * the wrapper too. 0, or -1 with an exception set. */
static int uuid_twin(void)
{
	PyObject *mods = py.PyImport_GetModuleDict();
	PyObject *u = mods ? py.PyDict_GetItemString(mods, "uuid") : NULL;
	PyObject *cur;
	int r = 0;

	if (!u || !uuid_wrap.fn)
		return 0;
	cur = py.PyObject_GetAttrString(u, "_generate_time_safe");
	if (!cur) {
		py.PyErr_Clear();
		return 0;
	}
	if (cur == uuid_wrap.original)
		r = py.PyObject_SetAttrString(u, "_generate_time_safe",
					      uuid_wrap.fn);
	py.Py_DecRef(cur);
	return r;
}

/* The wrappers of module 'name' into 'mod'. 0, or -1 with an exception. */
static int install_for(const char *name, PyObject *mod)
{
	int r = 0;
	size_t i;

	sb_guard_busy_enter();
	for (i = 0; r == 0 && i < SB_ARRAY_LEN(calls); i++)
		if (strcmp(calls[i].wrap.module, name) == 0)
			r = sb_wrap_install_in(&calls[i].wrap, mod);
	if (r == 0 && strcmp(name, uuid_wrap.module) == 0 &&
	    py.PyObject_HasAttrString(mod, uuid_wrap.attr)) {
		r = sb_wrap_install_in(&uuid_wrap, mod);
		if (r == 0)
			r = uuid_twin();
	}
	sb_guard_busy_leave();
	return r;
}

int sb_sysfiles_module_ready(PyObject *mod, const char *name)
{
	if (!name || (strcmp(name, "pwd") != 0 && strcmp(name, "grp") != 0 &&
		      strcmp(name, "spwd") != 0 && strcmp(name, "_socket") != 0 &&
		      strcmp(name, "posix") != 0 && strcmp(name, "_uuid") != 0))
		return 0;
	return install_for(name, mod);
}

