"""hc's statuses as Python exceptions: one class per status of
include/hc/status.h, named after it (HC_ERR_PARAM -> hc.ParamError), all
derived from hc.HcError. The classes are made from libhc's own status table,
so they cannot drift from it."""
from . import _lib


class HcError(Exception):
    """A failed hc call: .status (the number), .name ("HC_ERR_PARAM"),
    .exit_code (what hcrun exits with for it: 2 usage, 3 unavailable,
    4 runtime, 1 verification) and .message (hc's detail, as hcrun prints
    it)."""
    status = None
    name = None
    exit_code = 4

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


_by_status = {}


def _class_name(status_name):
    words = status_name[len('HC_ERR_'):].lower().split('_')
    return ''.join(w.capitalize() for w in words) + 'Error'


def _make_classes():
    lib = _lib.load()
    code = 1
    while True:
        name = lib.hc_status_name(code).decode()
        if name == 'HC_UNKNOWN':
            break
        doc = lib.hc_status_str(code).decode()
        cls = type(_class_name(name), (HcError,), {'status': code, 'name': name, 'exit_code': lib.hc_status_exit_code(code),
                                                   '__doc__': '%s (%s)' % (doc, name)})
        _by_status[code] = cls
        code += 1
    return {cls.__name__: cls for cls in _by_status.values()}


def error(status, message=None):
    """The exception for a status, with hc's last error as its message."""
    if message is None:
        message = _lib.load().hc_last_error().decode(errors='surrogateescape')
    cls = _by_status.get(status, HcError)
    return cls(message, status)


def check(status):
    if status != 0:
        raise error(status)


CLASSES = _make_classes()
