use mpcc_core::run_json;
fn main() {
    let cfg = std::env::args().nth(1).unwrap();
    let t = std::time::Instant::now();
    let out = run_json(&std::fs::read_to_string(cfg).unwrap()).unwrap();
    let el = t.elapsed().as_secs_f64();
    println!("events {} data {} wall {:.3}s  {:.2} Mpkt/s", out.events, out.data_packets, el, out.data_packets as f64 / el / 1e6);
    println!("delivered {:?}", out.u64("sf_delivered"));
    println!("drops {:?} loss_events {:?} timeouts {:?}", out.u64("sf_drops"), out.u64("sf_loss_events"), out.u64("sf_timeouts"));
    println!("link accepted {:?} drops {:?} maxq {:?}", out.u64("link_accepted"), out.u64("link_drops"), out.u32("link_max_queue"));
}
