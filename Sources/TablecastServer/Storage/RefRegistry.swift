import DequeModule
import Synchronization

/// Whose refs: a client id within its principal. Clients choose their ids, so refs are kept apart per principal
/// (see ``Credential/principal``): one token's clients can neither see nor take another's refs.
struct RefOwner: Hashable, Sendable {
    var principal: String
    var client: String
}

/// What a ref was used for. A ref is the retry key of one intent: a retry repeats the intent on its table, and
/// anything else sent with the same ref is refused (`ref_reused`), never answered with the first intent's ack.
struct RefUse: Hashable, Sendable {
    var table: String
    /// The life of the table (its epoch): a table dropped and created again under the same name is another table.
    /// 0 when unknown (refs stored before it was recorded), and then only the name is compared.
    var epoch: Int64
    /// The fingerprint of the intent (see ``IntentRef/fingerprint(_:on:)``); unknown for refs stored before schema
    /// version 2, and then only the table is compared.
    var intent: IntentFingerprint

    /// Whether `other` is a retry of this use.
    func admits(_ other: RefUse) -> Bool {
        table == other.table && (epoch == 0 || epoch == other.epoch) && (intent == .unknown || intent == other.intent)
    }
}

/// An intent's fingerprint as held in memory. Its stored form, sixteen hex digits, is one byte too long for a small
/// string: as text it cost a heap allocation per intent and kept one per remembered ref (up to `limit` per client).
enum IntentFingerprint: Hashable, Sendable {
    /// Stored as empty text (refs stored before schema version 2).
    case unknown
    /// Computed by the server, or stored as sixteen lowercase hex digits (as ``stored`` writes it).
    case hash(UInt64)
    /// Stored text that no fingerprint is written as: kept as it is, so that it still equals only itself.
    case text(String)

    /// The fingerprint stored as `text`.
    init(stored text: String) {
        if text.isEmpty {
            self = .unknown
        } else if let hash = Self.number(writtenAs: text) {
            self = .hash(hash)
        } else {
            self = .text(text)
        }
    }

    /// The number `text` writes as sixteen lowercase hex digits, nil for any other text.
    private static func number(writtenAs text: String) -> UInt64? {
        guard text.utf8.count == 16 else { return nil }
        var number: UInt64 = 0
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): number = number << 4 | UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): number = number << 4 | UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        return number
    }

    /// The stored form: sixteen lowercase hex digits, written in place (formatting with a radix and padding cost
    /// as much as the hashing).
    var stored: String {
        switch self {
        case .unknown: ""
        case .text(let text): text
        case .hash(let hash):
            String(unsafeUninitializedCapacity: 16) { digits in
                for index in 0..<16 {
                    let digit = UInt8(truncatingIfNeeded: hash >> (60 - 4 * index)) & 0xf
                    digits[index] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") - 10 + digit
                }
                return 16
            }
        }
    }
}

/// The refs each client has used, with what for, so that a retried intent is recognized and a reused ref refused
/// without a store lookup per intent: the refs an owner had stored are loaded once when it says hello, and every
/// intent about to be applied claims its ref, across tables. Only uses are held, not acks; a retry of a committed
/// intent fetches the stored ack.
final class RefRegistry: Sendable {
    private struct OwnerRefs {
        var uses: [String: RefUse] = [:]
        var order: Deque<String> = []
        /// Whether the store's refs were loaded. Claims add refs whether or not they were: an entry created by a
        /// claim alone (an intent resolved after the owner's last connection closed) must not pass for a loaded
        /// one, or a retry of an older ref would be taken for a new intent.
        var loaded = false

        /// Adds `ref` unless it is there; returns the use it already names instead.
        mutating func add(_ ref: String, _ use: RefUse, limit: Int) -> RefUse? {
            // One lookup finds or inserts: the default is evaluated, and stored, only when `ref` is absent (a
            // lookup, then an insert, hashed the ref twice per new intent).
            var added = false
            func adding() -> RefUse {
                added = true
                return use
            }
            let named = Self.value(of: &uses[ref, default: adding()])
            guard added else { return named }
            order.append(ref)
            while order.count > limit, let oldest = order.popFirst() { uses[oldest] = nil }
            return nil
        }

        private static func value(of use: inout RefUse) -> RefUse { use }
    }

    /// Most refs remembered per owner (the store keeps at least as many).
    let limit: Int
    private let owners = Mutex<[RefOwner: OwnerRefs]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Whether the stored refs of `owner` are loaded.
    func isLoaded(_ owner: RefOwner) -> Bool {
        owners.withLock { $0[owner]?.loaded ?? false }
    }

    /// Adds the refs `owner` has in the store.
    func load(_ owner: RefOwner, refs stored: [String: RefUse]) {
        owners.withLock { owners in
            // In place (`default:` subscript): copying the entry out and back would copy up to `limit` refs.
            for (ref, use) in stored { _ = owners[owner, default: OwnerRefs()].add(ref, use, limit: limit) }
            owners[owner, default: OwnerRefs()].loaded = true
        }
    }

    /// What `ref` of `owner` was used for, if the registry knows it, and whether the owner's stored refs are loaded
    /// (see ``isLoaded(_:)``): one lookup of the owner for both, as every intent with a ref asks.
    func lookup(_ owner: RefOwner, _ ref: String) -> (use: RefUse?, ownerLoaded: Bool) {
        owners.withLock { owners in
            guard let refs = owners[owner] else { return (nil, false) }
            return (refs.uses[ref], refs.loaded)
        }
    }

    /// Claims `ref` for `use` before the intent is applied; returns the use the ref already names instead, if any
    /// (which may be `use` itself). O(1): called once per intent with a ref.
    func claim(_ owner: RefOwner, _ ref: String, for use: RefUse) -> RefUse? {
        owners.withLock { $0[owner, default: OwnerRefs()].add(ref, use, limit: limit) }
    }

    /// Gives up the claim of an intent that was not stored after all, so a retry may use the ref again.
    func release(_ owner: RefOwner, _ ref: String, use: RefUse) {
        owners.withLock { owners in
            guard owners[owner]?.uses[ref] == use else { return }
            owners[owner]!.uses[ref] = nil
            // Released refs are the latest claimed (a group that failed or is rebased): searched from the end.
            if let index = owners[owner]!.order.lastIndex(of: ref) { owners[owner]!.order.remove(at: index) }
        }
    }

    /// Drops what is held for `owner` (its last connection closed); the store still has its refs.
    func forget(_ owner: RefOwner) {
        owners.withLock { _ = $0.removeValue(forKey: owner) }
    }
}
