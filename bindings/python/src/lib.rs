//! `idforge._idforge`: the Python extension over the idforge engine. Every generator is opened
//! through the library's `schemes::open` (the one way the command line and the service open
//! one), every id is decoded by its `inspect`; this crate only converts between Python objects
//! and the library's values. The Python package (`python/idforge`) re-exports it with the
//! exception classes, the `inspect` dataclass and the type stubs.

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::Duration;

use idforge::schemes::catalog::Kind;
use idforge::schemes::open::{ClockChoice, OpenOptions, Opened, TextFormat};
use idforge::schemes::placement::{self, Placement};
use idforge::text::Format;
use idforge::{OnClockBehind, OnExhausted, RandomSource};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyType};

/// Batches of at least this many ids are made with the GIL released.
const DETACH_AT: u64 = 4096;

// ---------------------------------------------------------------------------------------------
// Errors

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The value of `cell`, made by `make` the first time. Not `PyOnceLock::get_or_try_init`: that
/// releases the GIL, marks the cell as being initialised, then waits for the GIL again, so a
/// thread that forked meanwhile (it had the GIL) left its child a cell that no thread of the
/// child would ever finish, and the child's first id waited for ever (the forking tests on
/// Python 3.9). Here no lock is held while `make` runs, with the GIL; two threads may both make
/// a value, and the first one stored is kept (the other is dropped, issuing nothing).
fn once<'a, T>(
    cell: &'a PyOnceLock<T>,
    py: Python<'_>,
    make: impl FnOnce() -> PyResult<T>,
) -> PyResult<&'a T> {
    if let Some(v) = cell.get(py) {
        return Ok(v);
    }
    let v = make()?;
    // Storing takes the cell's lock for a moment, with the GIL held: no fork can come between.
    let _ = cell.set(py, v);
    Ok(cell.get(py).expect("a value was stored just above"))
}

/// The library's names for its settings (Rust items) as this package's arguments, most specific
/// first, so that a message says what to pass here (`state=PATH`), not what a Rust caller sets.
const SETTINGS: [(&str, &str); 21] = [
    (
        "(`StateOptions::shared_mode`, 666 here",
        "(state_mode=0o666 here",
    ),
    (
        "(`StateOptions::shared_mode`, 660 here",
        "(state_mode=0o660 here",
    ),
    (
        "a fixed clock (`at`) with `shared` true",
        "at= with shared=True",
    ),
    ("`shared` false", "shared=False"),
    ("`shared` true", "shared=True"),
    ("add `state`", "add state=PATH"),
    ("`state`", "state="),
    ("`durable` or `state_mode`", "durable= or state_mode="),
    ("as the `node` setting", "as node=N"),
    ("give no `node` setting", "leave out node="),
    (
        "(`StateOptions::path`, or IDFORGE_STATE_DIR)",
        "(state=PATH, or IDFORGE_STATE_DIR)",
    ),
    ("(`StateOptions::path`)", "(state=PATH)"),
    (
        "(`StateOptions::shared_mode`, e.g. 660)",
        "(state_mode=0o660, for instance)",
    ),
    ("`StateOptions::shared_mode`", "state_mode="),
    (
        "(`Policy`: `on_exhausted`, `max_lead`, `on_clock_behind`)",
        "(idforge.Policy: on_exhausted, max_lead, on_clock_behind)",
    ),
    ("(`Policy::max_lead`)", "(Policy(max_lead=SECONDS))"),
    (
        "(`OnClockBehind::Wait`)",
        "(Policy(on_clock_behind=\"wait\"))",
    ),
    ("for the fixed clock (`at`)", "for the fixed clock (at=)"),
    ("(`at`)", "(at=)"),
    ("(Policy::UNBOUNDED)", "(an unbounded lead)"),
    (
        "`Scheme::Custom(Layout::parse_spec(spec)?)`",
        "`Generator(\"custom\", layout=SPEC)`",
    ),
];

/// A library message in this package's terms ([`SETTINGS`]).
fn pythonize(msg: &str) -> String {
    let mut s = msg.to_string();
    for (from, to) in SETTINGS {
        s = s.replace(from, to);
    }
    s
}

/// An idforge error as the exception of its class, with the library's message and `kind`.
fn raise(py: Python<'_>, e: idforge::Error) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let m = once(&ERRORS, py, || {
            py.import("idforge.errors").map(Bound::unbind)
        })?;
        let cls = m.bind(py).getattr(e.family())?;
        let exc = cls.call1((pythonize(&e.to_string()),))?;
        exc.setattr("kind", e.variant_name())?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|err| err)
}

trait OrRaise<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for Result<T, idforge::Error> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| raise(py, e))
    }
}

/// Who chose where a host-wide generator's sequence lives, for what its errors advise.
#[derive(Clone, Copy, PartialEq)]
enum Placed {
    /// The caller (`state=`, `shared=True`).
    Asked,
    /// Nobody: `Generator(scheme)`, host-wide by default.
    Implicit,
    /// A module function (`idforge.uuid7()`), which takes no arguments.
    Module,
}

trait OrRaisePlaced<T> {
    /// As `or_raise`, for a host-wide generator: a state file error nobody asked for says why
    /// there is a file and how to do without it; one of a module function names what it can
    /// change (the environment, not arguments it does not take).
    fn or_raise_placed(self, py: Python<'_>, how: Placed) -> PyResult<T>;
}

impl<T> OrRaisePlaced<T> for Result<T, idforge::Error> {
    fn or_raise_placed(self, py: Python<'_>, how: Placed) -> PyResult<T> {
        self.map_err(|e| {
            let hint = placement::hint_applies(&e);
            let env_hint = placement::env_state_hint(&e);
            let err = raise(py, e);
            let v = err.value(py);
            if let Ok(msg) = v.str() {
                let mut text = msg.to_string();
                if how == Placed::Module {
                    text = text
                        .replace("(state=PATH, or IDFORGE_STATE_DIR)", "(IDFORGE_STATE_DIR)")
                        .replace("(state=PATH)", "(IDFORGE_STATE_DIR)");
                }
                if hint && how != Placed::Asked {
                    let how_not = if how == Placed::Module {
                        "a Generator with shared=False"
                    } else {
                        "shared=False"
                    };
                    text = format!("{text} {}", placement::shared_hint(how_not));
                }
                if let Some(h) = env_hint {
                    text = format!("{text} {h}");
                }
                let _ = v.setattr("args", (text,));
            }
            err
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Fast `uuid.UUID` objects

/// What making a `uuid.UUID` without running its `__init__` needs: the class, its allocator,
/// the names of its two slots and `SafeUUID.unknown`.
struct UuidMaker {
    class: Py<PyType>,
    alloc: ffi::allocfunc,
    int_name: Py<PyString>,
    is_safe_name: Py<PyString>,
    unknown: Py<PyAny>,
}

static UUID_MAKER: PyOnceLock<UuidMaker> = PyOnceLock::new();

fn uuid_maker(py: Python<'_>) -> PyResult<&UuidMaker> {
    once(&UUID_MAKER, py, || {
        let module = py.import("uuid")?;
        let class = module.getattr("UUID")?.cast_into::<PyType>()?;
        // SAFETY: `class` is a live type object; uuid.UUID is a heap type (a Python class), for
        // which PyType_GetSlot is defined under the limited API of 3.9.
        let slot = unsafe { ffi::PyType_GetSlot(class.as_type_ptr(), ffi::Py_tp_alloc) };
        if slot.is_null() {
            return Err(PyTypeError::new_err(
                "uuid.UUID has no allocator slot; cannot make UUID objects",
            ));
        }
        // SAFETY: the Py_tp_alloc slot holds an allocfunc.
        let alloc = unsafe { std::mem::transmute::<*mut c_void, ffi::allocfunc>(slot) };
        let unknown = module.getattr("SafeUUID")?.getattr("unknown")?.unbind();
        Ok(UuidMaker {
            class: class.unbind(),
            alloc,
            int_name: PyString::intern(py, "int").unbind(),
            is_safe_name: PyString::intern(py, "is_safe").unbind(),
            unknown,
        })
    })
}

/// A `uuid.UUID` holding `value`, as `uuid.UUID(int=value)` makes it (its `int` and `is_safe`
/// slots set, `is_safe` to `SafeUUID.unknown`) without the checks of `__init__`, which cost
/// most of the time of a call: `value` is a 128-bit integer by construction.
fn std_uuid(py: Python<'_>, value: u128) -> PyResult<Bound<'_, PyAny>> {
    let m = uuid_maker(py)?;
    let int = value.into_pyobject(py)?;
    // SAFETY: `alloc` is uuid.UUID's own tp_alloc, called as object.__new__ calls it; the
    // result is checked for NULL and owned. PyObject_GenericSetAttr stores through the class's
    // slot descriptors (bypassing UUID.__setattr__, which refuses every assignment), as
    // `object.__setattr__(u, 'int', value)` in uuid.UUID.__init__ does.
    unsafe {
        let obj = (m.alloc)(m.class.as_ptr().cast(), 0);
        let obj = Bound::from_owned_ptr_or_err(py, obj)?;
        if ffi::PyObject_GenericSetAttr(obj.as_ptr(), m.int_name.as_ptr(), int.as_ptr()) != 0
            || ffi::PyObject_GenericSetAttr(
                obj.as_ptr(),
                m.is_safe_name.as_ptr(),
                m.unknown.as_ptr(),
            ) != 0
        {
            return Err(PyErr::fetch(py));
        }
        Ok(obj)
    }
}

// ---------------------------------------------------------------------------------------------
// idforge.UUID: the package's own UUID type

/// A UUID as idforge's own immutable type: cheaper to make than `uuid.UUID` (about half the
/// time: see the README's benchmark), equal to, hashing and ordering like the `uuid.UUID` of
/// the same value, and converting to one with `to_uuid()`.
///
/// >>> import idforge, uuid
/// >>> u = idforge.native.uuid7()
/// >>> u == u.to_uuid() and hash(u) == hash(u.to_uuid())
/// True
/// >>> idforge.UUID("017f22e2-79b0-7cc3-98c4-dc0c0c07398f").version
/// 7
#[pyclass(frozen, module = "idforge", name = "UUID")]
struct PyUuid {
    value: u128,
}

fn uuid_text(v: u128) -> String {
    idforge::text::encode(v, 128, Format::Uuid)
        .as_str()
        .to_ascii_lowercase()
}

/// The 128-bit value of a `uuid.UUID`, an `idforge.UUID`, or `None` for anything else.
fn uuid_value(other: &Bound<'_, PyAny>) -> PyResult<Option<u128>> {
    if let Ok(u) = other.cast::<PyUuid>() {
        return Ok(Some(u.get().value));
    }
    let m = uuid_maker(other.py())?;
    if other.is_instance(m.class.bind(other.py()))? {
        return Ok(Some(other.getattr(m.int_name.bind(other.py()))?.extract()?));
    }
    Ok(None)
}

#[pymethods]
impl PyUuid {
    /// A UUID from its text (any form `uuid.UUID` reads: hex, hyphens, braces, `urn:uuid:`), an
    /// int, 16 bytes, or a `uuid.UUID`.
    #[new]
    fn new(value: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Some(v) = uuid_value(value)? {
            return Ok(PyUuid { value: v });
        }
        let py = value.py();
        let std = uuid_maker(py)?.class.bind(py);
        let u = if value.is_instance_of::<PyString>() {
            std.call1((value,))?
        } else if value.is_instance_of::<PyBytes>() {
            std.call((), Some(&[("bytes", value)].into_py_dict(py)?))?
        } else {
            std.call((), Some(&[("int", value)].into_py_dict(py)?))?
        };
        Ok(PyUuid {
            value: u.getattr("int")?.extract()?,
        })
    }

    /// The UUID as a 128-bit integer.
    #[getter]
    fn int(&self) -> u128 {
        self.value
    }

    /// The 16 bytes, most significant first.
    #[getter]
    fn bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.value.to_be_bytes())
    }

    /// 32 lowercase hex digits.
    #[getter]
    fn hex(&self) -> String {
        format!("{:032x}", self.value)
    }

    /// `urn:uuid:` and the text.
    #[getter]
    fn urn(&self) -> String {
        format!("urn:uuid:{}", uuid_text(self.value))
    }

    /// The version number (bits 48-51), for RFC 4122 / RFC 9562 variant UUIDs; else None.
    #[getter]
    fn version(&self) -> Option<u8> {
        ((self.value >> 62) & 0b11 == 0b10).then_some(((self.value >> 76) & 0xF) as u8)
    }

    /// The same value as a standard library `uuid.UUID`.
    fn to_uuid<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        std_uuid(py, self.value)
    }

    fn __str__(&self) -> String {
        uuid_text(self.value)
    }

    fn __repr__(&self) -> String {
        format!("UUID('{}')", uuid_text(self.value))
    }

    fn __int__(&self) -> u128 {
        self.value
    }

    /// As `uuid.UUID`: the hash of the integer (CPython hashes an int modulo 2**61 - 1).
    fn __hash__(&self) -> isize {
        (self.value % ((1u128 << 61) - 1)) as isize
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        Ok(match uuid_value(other)? {
            Some(o) => op
                .matches(self.value.cmp(&o))
                .into_pyobject(py)?
                .to_owned()
                .into_any()
                .unbind(),
            None => py.NotImplemented(),
        })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, (String,))> {
        Ok((slf.get_type(), (uuid_text(slf.get().value),)))
    }
}

use pyo3::types::IntoPyDict;

// ---------------------------------------------------------------------------------------------
// Generator

/// What `next()` returns.
#[derive(Clone, Copy)]
enum Out {
    /// A `uuid.UUID` (UUID schemes).
    Uuid,
    /// An int (schemes written in decimal).
    Int,
    /// Text in the format (ULID, TSID, ObjectId, XID, TypeID, or a format asked for).
    Text(TextFormat),
}

/// A policy for a generator: what happens when a tick's counter runs out and when the clock is
/// behind the last id. Unset fields keep the scheme's default. Every process sharing a state
/// file must use the same policy.
///
/// >>> p = idforge.Policy(on_exhausted="run-ahead", max_lead=0.5)
#[pyclass(frozen, from_py_object, module = "idforge", name = "Policy")]
#[derive(Clone)]
struct PyPolicy {
    on_exhausted: Option<OnExhausted>,
    max_lead: Option<Duration>,
    on_clock_behind: Option<OnClockBehind>,
}

#[pymethods]
impl PyPolicy {
    /// `on_exhausted`: "wait" or "run-ahead"; `max_lead`: seconds (float) ids may run ahead of
    /// the wall clock; `on_clock_behind`: "fail" or "wait".
    #[new]
    #[pyo3(signature = (on_exhausted=None, max_lead=None, on_clock_behind=None))]
    fn new(
        on_exhausted: Option<&str>,
        max_lead: Option<f64>,
        on_clock_behind: Option<&str>,
    ) -> PyResult<Self> {
        let on_exhausted = on_exhausted
            .map(|s| match s {
                "wait" => Ok(OnExhausted::Wait),
                "run-ahead" | "run_ahead" => Ok(OnExhausted::RunAhead),
                _ => Err(PyValueError::new_err(format!(
                    "on_exhausted {s:?}: use \"wait\" or \"run-ahead\""
                ))),
            })
            .transpose()?;
        let on_clock_behind = on_clock_behind
            .map(|s| match s {
                "fail" => Ok(OnClockBehind::Fail),
                "wait" => Ok(OnClockBehind::Wait),
                _ => Err(PyValueError::new_err(format!(
                    "on_clock_behind {s:?}: use \"fail\" or \"wait\""
                ))),
            })
            .transpose()?;
        let max_lead = max_lead
            .map(|s| {
                Duration::try_from_secs_f64(s).map_err(|_| {
                    PyValueError::new_err(format!(
                        "max_lead {s}: give a non-negative number of seconds"
                    ))
                })
            })
            .transpose()?;
        Ok(PyPolicy {
            on_exhausted,
            max_lead,
            on_clock_behind,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Policy(on_exhausted={:?}, max_lead={:?}, on_clock_behind={:?})",
            self.on_exhausted, self.max_lead, self.on_clock_behind
        )
    }
}

/// A generator of any idforge scheme. See the package's `Generator` docstring (in the stub) for
/// the arguments.
#[pyclass(frozen, module = "idforge", name = "Generator")]
struct PyGenerator {
    g: std::sync::Arc<Opened>,
    out: Out,
    /// The text format of `next_str()`.
    text: TextFormat,
    /// Bytes per id in `take_bytes`.
    width: usize,
}

impl PyGenerator {
    fn open(
        kind: &Kind,
        opts: &OpenOptions,
        format: Option<&str>,
        prefix: Option<&str>,
    ) -> Result<PyGenerator, idforge::Error> {
        // Host-wide generators of the same options share one mapping of their file.
        let g = placement::open_reused(kind, opts)?;
        let text = g.text_format_prefixed(format, prefix)?;
        let out = if format.is_some() || prefix.is_some() {
            Out::Text(text)
        } else if g.is_uuid() {
            Out::Uuid
        } else if text == TextFormat::Plain(Format::Dec) {
            Out::Int
        } else {
            Out::Text(text)
        };
        let width = g.bits().div_ceil(8) as usize;
        Ok(PyGenerator {
            g,
            out,
            text,
            width,
        })
    }

    fn convert<'py>(&self, py: Python<'py>, id: u128) -> PyResult<Bound<'py, PyAny>> {
        match self.out {
            Out::Uuid => std_uuid(py, id),
            Out::Int => int_of(py, id),
            Out::Text(f) => Ok(PyString::new(py, &self.g.render(id, f)).into_any()),
        }
    }

    /// `n` ids in an owned buffer, with the GIL released for large batches.
    fn ids(&self, py: Python<'_>, n: u64) -> PyResult<Vec<u128>> {
        // The room for `n` ids is asked for, not assumed: a count too large for memory raises
        // (ValueError past the address space, MemoryError past what the allocator gives)
        // instead of aborting the interpreter or panicking.
        // A Python int and its place in a list take about 48 bytes more than the id itself.
        let count = fits_in_memory(n, 64)?;
        let mut v: Vec<u128> = Vec::new();
        v.try_reserve_exact(count).map_err(|_| too_large(n, 64))?;
        let run = |v: &mut Vec<u128>| self.g.take(n, |id| v.push(id));
        if n >= DETACH_AT {
            py.detach(|| run(&mut v)).or_raise(py)?;
        } else {
            run(&mut v).or_raise(py)?;
        }
        Ok(v)
    }
}

/// The machine's physical memory in bytes (`None` where it cannot be read).
fn physical_memory() -> Option<u128> {
    // SAFETY: sysconf reads system configuration values; it has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && size > 0).then(|| pages as u128 * size as u128)
}

fn too_large(n: u64, per_id: u128) -> PyErr {
    let need = u128::from(n) * per_id;
    let gib = |b: u128| b as f64 / f64::from(1u32 << 30);
    let has = physical_memory().map_or(String::new(), |m| {
        format!("; this machine has {:.1} GiB", gib(m))
    });
    pyo3::exceptions::PyMemoryError::new_err(format!(
        "{n} ids would take about {:.1} GiB{has}: take fewer at a time (a loop of take_bytes, \
         or take(n) in chunks)",
        gib(need)
    ))
}

/// `n` as a count whose `per_id` bytes each fit in this machine's memory: a batch that cannot
/// is refused before it is made (a `MemoryError`, not an aborted interpreter or an allocation
/// that overcommitted memory lets through and the kernel kills later).
fn fits_in_memory(n: u64, per_id: u128) -> PyResult<usize> {
    let need = u128::from(n) * per_id;
    if need > isize::MAX as u128 || physical_memory().is_some_and(|m| need > m) {
        return Err(too_large(n, per_id));
    }
    usize::try_from(n).map_err(|_| too_large(n, per_id))
}

fn int_of(py: Python<'_>, id: u128) -> PyResult<Bound<'_, PyAny>> {
    Ok(match u64::try_from(id) {
        Ok(small) => small.into_pyobject(py)?.into_any(),
        Err(_) => id.into_pyobject(py)?.into_any(),
    })
}

fn clock_choice(s: &str) -> PyResult<ClockChoice> {
    Ok(match s {
        "auto" => ClockChoice::Auto,
        "precise" => ClockChoice::Precise,
        "counter" => ClockChoice::Counter,
        "ticker" => ClockChoice::Ticker,
        _ => {
            return Err(PyValueError::new_err(format!(
                "clock {s:?}: use \"auto\", \"precise\", \"counter\" or \"ticker\""
            )))
        }
    })
}

/// The fixed clock's time (`at=`) in Unix nanoseconds: RFC 3339 text, or an aware
/// `datetime.datetime` (a naive one names no instant, so it is refused, as text without an
/// offset is).
fn fixed_at(at: &Bound<'_, PyAny>) -> PyResult<u64> {
    let py = at.py();
    if let Ok(text) = at.extract::<String>() {
        return idforge::time::parse_rfc3339(&text).or_raise(py);
    }
    let datetime = py.import("datetime")?.getattr("datetime")?;
    if !at.is_instance(&datetime)? {
        return Err(PyTypeError::new_err(format!(
            "at= takes RFC 3339 text or an aware datetime.datetime, not {}",
            at.get_type().name()?
        )));
    }
    if at.call_method0("utcoffset")?.is_none() {
        return Err(PyValueError::new_err(
            "at= got a naive datetime, which names no instant: give it a time zone \
             (tzinfo=datetime.timezone.utc)",
        ));
    }
    // In UTC, through `datetime`'s own methods (not a subclass's): an offset with seconds or
    // microseconds (`+05:30:15.000007`) is applied to the last microsecond.
    let utc = py.import("datetime")?.getattr("timezone")?.getattr("utc")?;
    let in_utc = datetime.call_method1("astimezone", (at, utc))?;
    let text: String = datetime.call_method1("isoformat", (in_utc,))?.extract()?;
    idforge::time::parse_rfc3339(&text).or_raise(py)
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (scheme, node=None, *, shared=None, state=None, clock="auto", policy=None,
        layout=None, format=None, prefix=None, host_digits=None, at=None, fast_random=false,
        durable=false, state_mode=None, pid=None, mac_fragment=None, sequential=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        scheme: &str,
        node: Option<&Bound<'_, PyAny>>,
        shared: Option<bool>,
        state: Option<PathBuf>,
        clock: &str,
        policy: Option<PyPolicy>,
        layout: Option<&str>,
        format: Option<&str>,
        prefix: Option<&str>,
        host_digits: Option<u32>,
        at: Option<&Bound<'_, PyAny>>,
        fast_random: bool,
        durable: bool,
        state_mode: Option<u32>,
        pid: Option<u64>,
        mac_fragment: Option<u64>,
        sequential: bool,
    ) -> PyResult<Self> {
        // A bool is an int to Python: `node=True` would be node 1, a node nobody chose.
        let node = match node {
            Some(n) if n.is_instance_of::<PyBool>() => {
                return Err(PyTypeError::new_err(
                    "node= takes an int, not a bool (True would be read as node 1)",
                ));
            }
            Some(n) => Some(n.extract::<u64>()?),
            None => None,
        };
        if at.is_some() && clock != "auto" {
            return Err(PyValueError::new_err(format!(
                "at= fixes the clock, so clock={clock:?} would be ignored: give one or the other"
            )));
        }
        let kind = Kind::from_name(scheme, layout).or_raise(py)?;
        let mut opts = OpenOptions {
            node,
            host_digits,
            pid,
            mac_fragment,
            sequential,
            at_ns: at.map(fixed_at).transpose()?,
            clock: clock_choice(clock)?,
            random: if fast_random {
                RandomSource::Fast
            } else {
                RandomSource::Secure
            },
            ..OpenOptions::default()
        };
        if policy.is_some() && at.is_some() {
            // As `idforge gen --at` refuses --max-lead and friends.
            return Err(raise(
                py,
                idforge::Error::NotApplicable {
                    scheme: kind.name().to_string(),
                    setting: "a policy with a fixed clock (`at`)".into(),
                    why: "a fixed clock runs with no bound on the lead (Policy::UNBOUNDED)".into(),
                },
            ));
        }
        let policy_given = policy.as_ref().map(|_| ());
        if let Some(p) = policy {
            let mut base = kind.default_policy();
            if let Some(e) = p.on_exhausted {
                base.on_exhausted = e;
            }
            if let Some(l) = p.max_lead {
                base.max_lead = l;
            }
            if let Some(b) = p.on_clock_behind {
                base.on_clock_behind = b;
            }
            opts.policy = Some(base);
        }
        // Host-wide unless asked otherwise (the library's `Placement`, which the Node.js
        // package shares): processes started separately (workers of gunicorn, uWSGI, Celery,
        // multiprocessing) and children that first use a generator after a fork then draw from
        // one sequence.
        let asked = shared.is_some() || state.is_some();
        let placed = Placement {
            shared,
            state,
            state_mode,
            durable,
        }
        .apply(&kind, &mut opts, policy_given.is_some());
        let how = if asked {
            Placed::Asked
        } else {
            Placed::Implicit
        };
        let placed = placed.or_raise_placed(py, how)?;
        // Opening may create and check a state file, or start the ticker's thread: with the GIL
        // held, so that no thread of this interpreter forks meanwhile (a child forked while the
        // ticker's start lock or a state directory's creation was half done waited for ever on
        // a lock no thread of it would release). Opening takes microseconds; only a state
        // directory another process is creating at that moment makes it wait (at most 120 s).
        let opened = PyGenerator::open(&kind, &opts, format, prefix);
        match placed {
            Some(_) => opened.or_raise_placed(py, how),
            None => opened.or_raise(py),
        }
    }

    /// The next id: a `uuid.UUID` for UUID schemes, an int for schemes written in decimal, a
    /// str for text formats (or when `format` was given).
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let id = self.g.next().or_raise(py)?;
        self.convert(py, id)
    }

    /// The next id as an int.
    fn next_int<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let id = self.g.next().or_raise(py)?;
        int_of(py, id)
    }

    /// The next id as text, in the generator's format.
    fn next_str(&self, py: Python<'_>) -> PyResult<String> {
        let id = self.g.next().or_raise(py)?;
        Ok(self.g.render(id, self.text))
    }

    /// The next id as an `idforge.UUID` (UUID schemes only).
    fn next_native(&self, py: Python<'_>) -> PyResult<PyUuid> {
        if !self.g.is_uuid() {
            return Err(raise(
                py,
                idforge::Error::InvalidFormat(format!(
                    "{} ids are not UUIDs: use next(), next_int() or next_str()",
                    self.g.name()
                )),
            ));
        }
        Ok(PyUuid {
            value: self.g.next().or_raise(py)?,
        })
    }

    /// `n` ids as a list of what `next()` returns, in issue order.
    fn take<'py>(&self, py: Python<'py>, n: u64) -> PyResult<Bound<'py, PyList>> {
        let ids = self.ids(py, n)?;
        let items = ids
            .into_iter()
            .map(|id| self.convert(py, id))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// `n` ids as a list of ints.
    fn take_ints<'py>(&self, py: Python<'py>, n: u64) -> PyResult<Bound<'py, PyList>> {
        let ids = self.ids(py, n)?;
        let items = ids
            .into_iter()
            .map(|id| int_of(py, id))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// `n` ids as one bytes object: each id big-endian in `width` bytes (16 for 128-bit ids,
    /// 12 for ObjectId and XID, 8 for 64-bit ids), in issue order. The GIL is released while
    /// the ids are made (from 4096 ids on).
    fn take_bytes<'py>(&self, py: Python<'py>, n: u64) -> PyResult<Bound<'py, PyBytes>> {
        let w = self.width;
        let len = fits_in_memory(n, w as u128)? * w;
        PyBytes::new_with(py, len, |buf: &mut [u8]| {
            let fill = |buf: &mut [u8]| {
                let mut chunks = buf.chunks_exact_mut(w);
                self.g.take(n, |id| {
                    if let Some(c) = chunks.next() {
                        c.copy_from_slice(&id.to_be_bytes()[16 - w..]);
                    }
                })
            };
            if n >= DETACH_AT {
                py.detach(|| fill(buf)).or_raise(py)
            } else {
                fill(buf).or_raise(py)
            }
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.next(py)
    }

    /// The scheme's name.
    #[getter]
    fn scheme(&self) -> String {
        self.g.name().to_string()
    }

    /// Width of an id in bits.
    #[getter]
    fn bits(&self) -> u32 {
        self.g.bits()
    }

    /// Bytes per id in `take_bytes`.
    #[getter]
    fn width(&self) -> usize {
        self.width
    }

    /// What `next()` returns: "uuid" (a `uuid.UUID`), "int" or "str".
    #[getter]
    fn returns(&self) -> &'static str {
        match self.out {
            Out::Uuid => "uuid",
            Out::Int => "int",
            Out::Text(_) => "str",
        }
    }

    /// Whether ids are UUIDs.
    #[getter]
    fn is_uuid(&self) -> bool {
        self.g.is_uuid()
    }

    /// The state file, for host-wide generators; else None.
    #[getter]
    fn state_path(&self) -> Option<PathBuf> {
        self.g.state_path().map(PathBuf::from)
    }

    /// How far the last id is ahead of the wall clock, in seconds.
    #[getter]
    fn lead(&self) -> f64 {
        self.g.lead().as_secs_f64()
    }

    /// An id (as `next()` returns it, or an int) as text in the generator's format.
    fn format(&self, id: &Bound<'_, PyAny>) -> PyResult<String> {
        let v: u128 = match uuid_value(id)? {
            Some(v) => v,
            None => id.extract()?,
        };
        let bits = self.g.bits();
        if bits < 128 && v >> bits != 0 {
            // Cut to the width it would be another id: an error, not a wrong answer.
            return Err(PyValueError::new_err(format!(
                "{v} does not fit in the {bits} bits of a {} id",
                self.g.name()
            )));
        }
        Ok(self.g.render(v, self.text))
    }

    fn __repr__(&self) -> String {
        format!("Generator({:?})", self.g.name())
    }
}

// ---------------------------------------------------------------------------------------------
// Module-level functions: one process-wide generator per scheme

static DEFAULTS: [PyOnceLock<Py<PyGenerator>>; 7] = [const { PyOnceLock::new() }; 7];

/// The module functions' generator of `scheme`, opened on first use in this process: host-wide
/// as `Generator(scheme)` (a worker that first calls `idforge.uuid7()` after a fork, or one
/// started separately, shares the sequence of the others), in-process with `IDFORGE_SHARED=0`.
fn default_gen<'py>(
    py: Python<'py>,
    slot: usize,
    scheme: &str,
) -> PyResult<Bound<'py, PyGenerator>> {
    let r = REPLACED[slot].load(Ordering::Acquire);
    if !r.is_null() {
        // SAFETY: a strong reference to a `Generator`, stored by `replace_default` and never
        // released; the GIL is held.
        return Ok(unsafe { Bound::from_borrowed_ptr(py, r).cast_into_unchecked() });
    }
    let g = once(&DEFAULTS[slot], py, || {
        Py::new(py, open_default(py, scheme)?)
    })?;
    Ok(g.bind(py).clone())
}

/// Opens a module functions' generator of `scheme`, placed as `Generator(scheme)` is (the
/// library's `Placement`), with the GIL held (see `Generator.__new__` and `once`).
fn open_default(py: Python<'_>, scheme: &str) -> PyResult<PyGenerator> {
    let kind = Kind::from_name(scheme, None).or_raise(py)?;
    let mut opts = OpenOptions::default();
    let placed = Placement::default()
        .apply(&kind, &mut opts, false)
        .or_raise_placed(py, Placed::Module)?;
    let opened = PyGenerator::open(&kind, &opts, None, None);
    match placed {
        Some(_) => opened.or_raise_placed(py, Placed::Module),
        None => opened.or_raise(py),
    }
}

/// Generators that replaced a module function's generator whose state file was lost: strong
/// references never released (one per lost file).
static REPLACED: [AtomicPtr<ffi::PyObject>; 7] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; 7];

/// Runs `f` on the module functions' generator of `scheme`. A generator whose state file was
/// deleted or replaced stops for good (`StateFileLostError`); it is then replaced by one on the
/// file the path now names (a new file is made as for a new process) and `f` runs again: once,
/// so a file that keeps being lost, or was rewound in place, gives its error. Returns what `f`
/// returned and the generator it ran on (whose output type converts it).
fn with_default<'py, T>(
    py: Python<'py>,
    slot: usize,
    scheme: &str,
    mut f: impl FnMut(&Opened) -> Result<T, idforge::Error>,
) -> PyResult<(T, Bound<'py, PyGenerator>)> {
    let g = default_gen(py, slot, scheme)?;
    match f(&g.get().g) {
        Err(idforge::Error::StateFile(idforge::StateFileError::Lost { .. })) => {
            let fresh = open_default(py, scheme)?;
            if std::sync::Arc::ptr_eq(&fresh.g, &g.get().g) {
                // The path names the same file (rewound in place): nothing new to map.
                let v = f(&g.get().g).or_raise_placed(py, Placed::Module)?;
                return Ok((v, g));
            }
            let fresh = Bound::new(py, fresh)?;
            let result = f(&fresh.get().g).or_raise_placed(py, Placed::Module);
            // With the GIL held: no other thread of this interpreter stores meanwhile.
            REPLACED[slot].store(fresh.clone().into_ptr(), Ordering::Release);
            Ok((result?, fresh))
        }
        other => Ok((other.or_raise_placed(py, Placed::Module)?, g)),
    }
}

/// A UUIDv7 (RFC 9562, monotonic: 16-bit counter per millisecond) as a `uuid.UUID`.
///
/// >>> u = idforge.uuid7(); u.version
/// 7
#[pyfunction]
fn uuid7(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let (id, _) = with_default(py, 6, "uuid7", Opened::next)?;
    std_uuid(py, id)
}

/// A UUIDv7 as an `idforge.UUID` (`idforge.native.uuid7`).
#[pyfunction]
fn uuid7_native(py: Python<'_>) -> PyResult<PyUuid> {
    Ok(PyUuid {
        value: with_default(py, 6, "uuid7", Opened::next)?.0,
    })
}

/// A UUIDv4 (122 bits from the secure generator) as a `uuid.UUID`.
#[pyfunction]
fn uuid4(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    std_uuid(py, idforge::schemes::uuid4::uuid4())
}

/// A UUIDv4 as an `idforge.UUID` (`idforge.native.uuid4`).
#[pyfunction]
fn uuid4_native() -> PyUuid {
    PyUuid {
        value: idforge::schemes::uuid4::uuid4(),
    }
}

macro_rules! default_fn {
    ($name:ident, $slot:expr, $scheme:expr, $doc:expr) => {
        #[doc = $doc]
        #[pyfunction]
        fn $name(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
            let (id, g) = with_default(py, $slot, $scheme, Opened::next)?;
            g.get().convert(py, id)
        }
    };
}

default_fn!(
    ulid,
    0,
    "ulid",
    "A monotonic ULID as its 26-character text."
);
default_fn!(
    uprotocol,
    1,
    "uprotocol",
    "A uProtocol UUIDv7 as a `uuid.UUID`."
);
default_fn!(
    uprotocol_v8,
    2,
    "uprotocol-v8",
    "A uProtocol v8 UUID as a `uuid.UUID`."
);
default_fn!(
    nanots,
    3,
    "nanots",
    "A nanots timestamp id (Unix nanoseconds) as an int."
);
default_fn!(locality, 4, "locality", "A Locality UUID as a `uuid.UUID`.");

/// A TypeID's text: `prefix_` and the 26-character suffix (the bare suffix for prefix "").
///
/// >>> idforge.typeid("user").startswith("user_0")
/// True
#[pyfunction]
#[pyo3(signature = (prefix=""))]
fn typeid(py: Python<'_>, prefix: &str) -> PyResult<String> {
    let p = idforge::text::TypeIdPrefix::new(prefix).or_raise(py)?;
    let (id, _) = with_default(py, 5, "typeid", Opened::next)?;
    Ok(p.encode(id).as_str().to_string())
}

// ---------------------------------------------------------------------------------------------
// inspect

/// Decodes id text as `scheme` (or as what the text shows): a dict of the library's
/// `Decoded` fields; `idforge.inspect` turns it into a `Decoded` dataclass.
#[pyfunction]
#[pyo3(signature = (text, scheme=None, format=None, layout=None, host_digits=None))]
fn inspect_dict<'py>(
    py: Python<'py>,
    text: &str,
    scheme: Option<&str>,
    format: Option<&str>,
    layout: Option<&str>,
    host_digits: Option<u32>,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = match scheme {
        Some(s) => Some(Kind::from_name(s, layout).or_raise(py)?),
        None if layout.is_some() => {
            return Err(PyValueError::new_err("a layout needs scheme=\"custom\""))
        }
        None => None,
    };
    let format = format
        .map(|f| f.parse::<Format>().map_err(idforge::Error::InvalidFormat))
        .transpose()
        .or_raise(py)?;
    let d = idforge::inspect::inspect_as(text, kind.as_ref(), format, host_digits).or_raise(py)?;
    let out = PyDict::new(py);
    out.set_item("input", &d.input)?;
    out.set_item("scheme", &d.scheme)?;
    match &d.wide {
        // Wider than 128 bits (a KSUID, 160): the value of all its bytes, as Python ints hold it.
        Some(bytes) => out.set_item(
            "value",
            py.get_type::<pyo3::types::PyInt>()
                .call_method1("from_bytes", (PyBytes::new(py, bytes), "big"))?,
        )?,
        None => out.set_item("value", d.value)?,
    }
    out.set_item("bits", d.bits)?;
    out.set_item("unix_ns", d.unix_ns)?;
    out.set_item("time_text", &d.time)?;
    out.set_item("node", d.node)?;
    out.set_item("counter", d.counter)?;
    out.set_item("random", d.random)?;
    out.set_item("version", d.version)?;
    out.set_item("variant", d.variant)?;
    out.set_item("canonical", &d.canonical)?;
    out.set_item("pid", d.pid)?;
    out.set_item("mac", &d.mac)?;
    out.set_item("prefix", &d.prefix)?;
    out.set_item("layouts", &d.layouts)?;
    out.set_item("note", &d.note)?;
    out.set_item("hint", d.hint())?;
    let parts = PyDict::new(py);
    for (k, v) in d.parts() {
        match v {
            idforge::inspect::Part::Int(n) => parts.set_item(k, n)?,
            other => parts.set_item(k, other.to_string())?,
        }
    }
    out.set_item("parts", parts)?;
    Ok(out)
}

/// The names of every scheme, in the order `idforge schemes` lists them.
#[pyfunction]
fn scheme_names() -> Vec<&'static str> {
    idforge::schemes::catalog::NAMES.to_vec()
}

/// How many forks led to this process (0 in the original process), as the engine counts them.
#[pyfunction]
fn fork_generation() -> u64 {
    idforge::shm::fork_generation()
}

#[pymodule]
fn _idforge(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Making an object of a class here, at import, runs PyO3's own lazy once-cells while the
    // importing thread is the only one in this module: the first object made later would
    // otherwise initialise `is_runtime_3_10` (abi3's slot lookup) through
    // `PyOnceLock::get_or_init`, which releases the GIL while the cell is marked as being
    // initialised, and a thread that forked in that window left its child a cell nobody would
    // finish (a child's first `uuid7()` waited for ever: seen 1 run in 2 on Python 3.9, gdb in
    // `get_slot::is_runtime_3_10`).
    drop(Py::new(m.py(), PyUuid { value: 0 })?);
    m.add_class::<PyGenerator>()?;
    m.add_class::<PyPolicy>()?;
    m.add_class::<PyUuid>()?;
    m.add_function(wrap_pyfunction!(uuid7, m)?)?;
    m.add_function(wrap_pyfunction!(uuid7_native, m)?)?;
    m.add_function(wrap_pyfunction!(uuid4, m)?)?;
    m.add_function(wrap_pyfunction!(uuid4_native, m)?)?;
    m.add_function(wrap_pyfunction!(ulid, m)?)?;
    m.add_function(wrap_pyfunction!(uprotocol, m)?)?;
    m.add_function(wrap_pyfunction!(uprotocol_v8, m)?)?;
    m.add_function(wrap_pyfunction!(nanots, m)?)?;
    m.add_function(wrap_pyfunction!(locality, m)?)?;
    m.add_function(wrap_pyfunction!(typeid, m)?)?;
    m.add_function(wrap_pyfunction!(inspect_dict, m)?)?;
    m.add_function(wrap_pyfunction!(scheme_names, m)?)?;
    m.add_function(wrap_pyfunction!(fork_generation, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
