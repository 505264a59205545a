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
    /// A ref claimed for an intent, until it is committed (see ``keep(_:_:_:)``) or released.
    struct Claim: Equatable {
        var use: RefUse
        /// How many owners had been forgotten when it was claimed.
        fileprivate var era: Int
    }

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

    private struct State {
        var owners: [RefOwner: OwnerRefs] = [:]
        /// Owners forgotten so far: a claim made before the latest may be gone (see ``keep(_:_:_:)``).
        var forgets = 0
    }

    /// Most refs remembered per owner (the store keeps at least as many).
    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// Whether the stored refs of `owner` are loaded.
    func isLoaded(_ owner: RefOwner) -> Bool {
        state.withLock { $0.owners[owner]?.loaded ?? false }
    }

    /// Adds the refs `owner` has in the store.
    func load(_ owner: RefOwner, refs stored: [String: RefUse]) {
        state.withLock { state in
            // In place (`default:` subscript): copying the entry out and back would copy up to `limit` refs.
            for (ref, use) in stored { _ = state.owners[owner, default: OwnerRefs()].add(ref, use, limit: limit) }
            state.owners[owner, default: OwnerRefs()].loaded = true
        }
    }

    /// What `ref` of `owner` was used for, if the registry knows it, and whether the owner's stored refs are loaded
    /// (see ``isLoaded(_:)``): one lookup of the owner for both, as every intent with a ref asks.
    func lookup(_ owner: RefOwner, _ ref: String) -> (use: RefUse?, ownerLoaded: Bool) {
        state.withLock { state in
            guard let refs = state.owners[owner] else { return (nil, false) }
            return (refs.uses[ref], refs.loaded)
        }
    }

    /// Claims `ref` for `use` before the intent is applied. Returns the use the ref already names instead, if any
    /// (which may be `use` itself), and the claim, to ``keep(_:_:_:)`` once the intent is committed. O(1): called
    /// once per intent with a ref.
    func claim(_ owner: RefOwner, _ ref: String, for use: RefUse) -> (prior: RefUse?, claim: Claim) {
        state.withLock { state in
            (state.owners[owner, default: OwnerRefs()].add(ref, use, limit: limit), Claim(use: use, era: state.forgets))
        }
    }

    /// Makes sure a committed intent's ref is still known: when an owner was forgotten since it was claimed (its
    /// last connection closed, maybe this owner's, and it may have said hello again and loaded its refs from the
    /// store before this intent was stored), it is claimed again. Otherwise nothing is looked up: called once per
    /// committed intent with a ref.
    func keep(_ owner: RefOwner, _ ref: String, _ claim: Claim) {
        state.withLock { state in
            guard state.forgets != claim.era else { return }
            _ = state.owners[owner, default: OwnerRefs()].add(ref, claim.use, limit: limit)
        }
    }

    /// Gives up the claim of an intent that was not stored after all, so a retry may use the ref again.
    func release(_ owner: RefOwner, _ ref: String, _ claim: Claim) {
        state.withLock { state in
            guard state.owners[owner]?.uses[ref] == claim.use else { return }
            state.owners[owner]!.uses[ref] = nil
            // Released refs are the latest claimed (a group that failed or is rebased): searched from the end.
            if let index = state.owners[owner]!.order.lastIndex(of: ref) {
                state.owners[owner]!.order.remove(at: index)
            }
        }
    }

    /// Drops what is held for `owner` (its last connection closed); the store still has its refs.
    func forget(_ owner: RefOwner) {
        state.withLock { state in
            state.owners[owner] = nil
            state.forgets += 1
        }
    }
}
