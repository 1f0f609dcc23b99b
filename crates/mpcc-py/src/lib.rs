//! `mpcc._core`: the Rust core exposed to Python.
//!
//! `simulate(config_json) -> dict`: runs the packet-level simulator (without holding the GIL,
//! so threads run simulations in parallel) and returns {"events": int, "data_packets": int,
//! "columns": {name: (dtype, bytes)}} with dtype one of "f8", "u8", "u4" (little-endian, read
//! with numpy.frombuffer).
use mpcc_core::sim::Column;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain-old-data numeric slices reinterpreted as their bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// `progress`, if given, is called as `progress(simulated_seconds_done)` about every
/// `progress_step_s` of simulated time (the simulation runs without the GIL in between).
#[pyfunction]
#[pyo3(signature = (config_json, progress=None, progress_step_s=None))]
fn simulate<'py>(
    py: Python<'py>,
    config_json: &str,
    progress: Option<Bound<'py, PyAny>>,
    progress_step_s: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg: mpcc_core::Config = serde_json_from_str(config_json)
        .map_err(|e| PyValueError::new_err(format!("bad simulator config: {e}")))?;
    let mut sim = mpcc_core::Sim::new(&cfg).map_err(PyValueError::new_err)?;
    let out = match progress {
        None => py.detach(move || sim.run()),
        Some(cb) => {
            let step = progress_step_s
                .unwrap_or(sim.duration_s() / 100.0)
                .max(1e-6);
            let mut t = 0.0;
            loop {
                t += step;
                let done = py.detach(|| sim.run_until(t));
                cb.call1((t.min(sim.duration_s()),))?;
                if done {
                    break;
                }
            }
            py.detach(move || sim.finish())
        }
    }
    .map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("events", out.events)?;
    d.set_item("data_packets", out.data_packets)?;
    let cols = PyDict::new(py);
    for (name, col) in &out.columns {
        let (dt, b) = match col {
            Column::F64(v) => ("<f8", as_bytes(v)),
            Column::U64(v) => ("<u8", as_bytes(v)),
            Column::U32(v) => ("<u4", as_bytes(v)),
        };
        cols.set_item(*name, (dt, PyBytes::new(py, b)))?;
    }
    d.set_item("columns", cols)?;
    Ok(d)
}

fn serde_json_from_str(s: &str) -> Result<mpcc_core::Config, String> {
    mpcc_core::config::parse(s)
}

/// The Rust registry: {name: {parameter: default}} and {alias: (name, {parameter: preset})},
/// so Python can check that its registry has the same defaults.
#[pyfunction]
fn registry<'py>(py: Python<'py>) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let reg = PyDict::new(py);
    for a in mpcc_core::cc::REGISTRY {
        let p = PyDict::new(py);
        for (k, v) in a.params {
            p.set_item(*k, *v)?;
        }
        reg.set_item(a.name, p)?;
    }
    let ali = PyDict::new(py);
    for (alias, target, preset) in mpcc_core::cc::ALIASES {
        let p = PyDict::new(py);
        for (k, v) in preset.iter() {
            p.set_item(*k, *v)?;
        }
        ali.set_item(*alias, (*target, p))?;
    }
    Ok((reg, ali))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(registry, m)?)?;
    Ok(())
}
