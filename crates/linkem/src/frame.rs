//! Ethernet/IP frame helpers: wire size, the ECN field, CE marking with the IPv4 checksum.

pub const ETH_HLEN: usize = 14;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86DD;

fn ethertype(f: &[u8]) -> Option<u16> {
    if f.len() < ETH_HLEN {
        return None;
    }
    Some(u16::from_be_bytes([f[12], f[13]]))
}

/// Bytes the link is charged for: the IP packet (frame minus the Ethernet header), so a
/// 1500-byte MTU packet costs 1500 bytes as in the scenario's `packet_bytes`.
pub fn wire_bytes(f: &[u8]) -> usize {
    f.len().saturating_sub(ETH_HLEN).max(1)
}

/// ECN field (RFC 3168): 0 = Not-ECT, 1 = ECT(1), 2 = ECT(0), 3 = CE. None if not IP.
pub fn ecn(f: &[u8]) -> Option<u8> {
    match ethertype(f)? {
        ETH_P_IP if f.len() >= ETH_HLEN + 20 => Some(f[ETH_HLEN + 1] & 3),
        ETH_P_IPV6 if f.len() >= ETH_HLEN + 40 => Some((f[ETH_HLEN + 1] >> 4) & 3),
        _ => None,
    }
}

pub fn is_ect(f: &[u8]) -> bool {
    matches!(ecn(f), Some(1) | Some(2))
}

/// Set CE (both ECN bits) and, for IPv4, fix the header checksum (RFC 1624 incremental
/// update HC' = ~(~HC + ~m + m') on the 16-bit word holding the TOS byte).
pub fn set_ce(f: &mut [u8]) -> bool {
    match ethertype(f) {
        Some(ETH_P_IP) if f.len() >= ETH_HLEN + 20 => {
            let ip = &mut f[ETH_HLEN..];
            let old = u16::from_be_bytes([ip[0], ip[1]]);
            ip[1] |= 3;
            let new = u16::from_be_bytes([ip[0], ip[1]]);
            let hc = u16::from_be_bytes([ip[10], ip[11]]);
            let mut sum = (!hc as u32) + (!old as u32) + (new as u32);
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            let hc2 = !(sum as u16);
            ip[10..12].copy_from_slice(&hc2.to_be_bytes());
            true
        }
        Some(ETH_P_IPV6) if f.len() >= ETH_HLEN + 40 => {
            f[ETH_HLEN + 1] |= 3 << 4;
            true
        }
        _ => false,
    }
}

/// Internet checksum of an IPv4 header (0 when the header is valid).
pub fn ipv4_header_checksum(ip: &[u8]) -> u16 {
    let ihl = ((ip[0] & 0xf) as usize) * 4;
    let mut sum: u32 = 0;
    for i in (0..ihl).step_by(2) {
        sum += u16::from_be_bytes([ip[i], ip[i + 1]]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ce_marking_keeps_the_ipv4_checksum_valid() {
        // Ethernet + minimal IPv4 header with ECT(0), checksum computed independently below.
        let mut f = vec![0u8; 14 + 20];
        f[12] = 0x08;
        f[13] = 0x00;
        let ip = [0x45u8, 0x02, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2];
        f[14..34].copy_from_slice(&ip);
        let c = ipv4_header_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        assert_eq!(ipv4_header_checksum(&f[14..34]), 0);
        assert!(is_ect(&f));
        assert!(set_ce(&mut f));
        assert_eq!(ecn(&f), Some(3));
        assert_eq!(ipv4_header_checksum(&f[14..34]), 0);
        assert_eq!(wire_bytes(&f), 20);
    }
}
