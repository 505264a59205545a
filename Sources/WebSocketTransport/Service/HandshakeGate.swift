/// Counts, per peer address, the TCP connections that have not completed their WebSocket handshake (they still
/// hold one of lws' header tables), so that one address cannot hold them all: a slowloris that opens thousands
/// of connections and sends half a request each. Touched only on the service thread.
struct HandshakeGate {
    /// Handshakes one address may have in flight; nil: no cap.
    let maxPerAddress: Int?
    private var addressOf: [UInt: String] = [:]
    private var perAddress: [String: Int] = [:]

    init(maxPerAddress: Int?) {
        self.maxPerAddress = maxPerAddress
    }

    /// Whether a new connection from `address` may start a handshake.
    func admits(_ address: String) -> Bool {
        guard let maxPerAddress else { return true }
        return perAddress[address, default: 0] < maxPerAddress
    }

    /// The connection `key` from `address` started its handshake.
    mutating func began(_ key: UInt, from address: String) {
        guard addressOf.updateValue(address, forKey: key) == nil else { return }
        perAddress[address, default: 0] += 1
    }

    /// The connection `key` completed its handshake or closed; unknown keys are ignored.
    mutating func ended(_ key: UInt) {
        guard let address = addressOf.removeValue(forKey: key) else { return }
        let remaining = perAddress[address, default: 1] - 1
        perAddress[address] = remaining > 0 ? remaining : nil
    }
}
