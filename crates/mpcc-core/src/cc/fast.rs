//! FAST TCP (Tang et al. eq. (1)): every `update_interval_s` each route sets
//!   w ← min(2w, (1−γ) w + γ (baseRTT/RTT · w + α)),
//! no per-ACK increase, a loss halves the window. Algorithm 2 of Tang et al. adapts α every
//! `adapt_interval_s` (0 = off): α* = q/(l·w)·α₀ with q the mean queueing delay, l the loss
//! rate over the interval, w = `adapt_w`; α ← min((1+δ)α, α*) if α < α*, max((1−δ)α, α*) if
//! α > α*.
use super::{halve, Controller, Subflows};

pub struct Fast {
    pub alpha: f64,
    pub gamma: f64,
    pub update_interval_s: f64,
    pub adapt_interval_s: f64,
    pub adapt_w: f64,
    pub adapt_delta: f64,
}

impl Fast {
    /// Eq. (1) with the given α (Algorithm 2 changes α per connection).
    pub fn update(&self, w: f64, rtt: f64, base_rtt: f64, alpha: f64) -> f64 {
        let target = (1.0 - self.gamma) * w + self.gamma * (base_rtt / rtt * w + alpha);
        (2.0 * w).min(target)
    }
    /// One step of Algorithm 2: new α from the current one, the mean queueing delay `q` (s)
    /// and the loss rate `l` over the last interval.
    pub fn adapt(&self, alpha: f64, q: f64, l: f64) -> f64 {
        let target = if l > 0.0 {
            q / (l * self.adapt_w) * self.alpha
        } else if q > 0.0 {
            f64::INFINITY
        } else {
            return alpha;
        };
        if alpha < target {
            ((1.0 + self.adapt_delta) * alpha).min(target)
        } else if alpha > target {
            ((1.0 - self.adapt_delta) * alpha).max(target)
        } else {
            alpha
        }
    }
    /// The periodic update (1) of route r with the parameter α of the scenario.
    pub fn on_update(&self, sf: &Subflows, r: usize) -> f64 {
        self.update(sf.cwnd[r], sf.rtt[r], sf.base_rtt[r], self.alpha)
    }
}

impl Controller for Fast {
    fn name(&self) -> &'static str {
        "fast"
    }
    fn on_ack(&self, _sf: &Subflows, _r: usize) -> f64 {
        0.0
    }
    fn on_loss(&self, sf: &Subflows, r: usize) -> f64 {
        halve(sf, r)
    }
    fn fast(&self) -> Option<&Fast> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::Fast;

    fn fast() -> Fast {
        Fast {
            alpha: 50.0,
            gamma: 0.5,
            update_interval_s: 0.02,
            adapt_interval_s: 120.0,
            adapt_w: 125.0,
            adapt_delta: 0.1,
        }
    }

    /// Algorithm 2 by hand: α* = q/(l·w)·α₀, one step of at most δ = 10 % towards α*.
    #[test]
    fn algorithm2_steps() {
        let f = fast();
        // α* = 0.02/(1e-4·125)·50 = 80 > 50: up by 10 % to 55
        assert!((f.adapt(50.0, 0.02, 1e-4) - 55.0).abs() < 1e-12);
        // α* = 80, α = 75: 82.5 would overshoot, stop at α* = 80
        assert!((f.adapt(75.0, 0.02, 1e-4) - 80.0).abs() < 1e-12);
        // α* = 0.002/(1e-3·125)·50 = 0.8 < 50: down by 10 % to 45
        assert!((f.adapt(50.0, 0.002, 1e-3) - 45.0).abs() < 1e-12);
        // α* = 0.8, α = 0.85: 0.765 would undershoot, stop at 0.8
        assert!((f.adapt(0.85, 0.002, 1e-3) - 0.8).abs() < 1e-12);
        // no loss in the interval: α* = ∞, up by δ; no loss and no queue: unchanged
        assert!((f.adapt(50.0, 0.01, 0.0) - 55.0).abs() < 1e-12);
        assert_eq!(f.adapt(50.0, 0.0, 0.0), 50.0);
    }

    /// Eq. (1) with γ = 0.5: w ← min(2w, w/2 + (baseRTT/RTT·w + α)/2).
    #[test]
    fn window_update() {
        let f = fast();
        // 100/2 + (0.1/0.125·100 + 50)/2 = 50 + 65 = 115
        assert!((f.update(100.0, 0.125, 0.1, 50.0) - 115.0).abs() < 1e-12);
        // no queue: w/2 + (w + α)/2 = w + α/2, capped at 2w
        assert!((f.update(10.0, 0.1, 0.1, 50.0) - 20.0).abs() < 1e-12);
    }
}
