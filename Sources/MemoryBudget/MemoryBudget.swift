import Synchronization

/// The one memory budget a server's big consumers draw from: a limit in bytes (`serve --memory-limit`), split into
/// a share per ``Consumer``. Each consumer accounts for the bytes it holds in its ``Account``, and when it would pass
/// its share it degrades in its own defined way (drops its oldest entries, waits, pages, closes the connection
/// holding the most) instead of growing. The accounts are atomics: charging and releasing cost one atomic add each,
/// from any thread.
public final class MemoryBudget: Sendable {
    /// What holds the memory.
    public enum Consumer: Int, CaseIterable, Sendable {
        /// The encoded updates and rebase layouts tables keep for catch-ups and stale bases.
        case updateHistory
        /// Encoded `snapshot` messages shared by catch-ups (subscribe, refresh).
        case snapshots
        /// `history` and `snapshotAt` replies being written.
        case historyReplies
        /// Messages queued to connections and not written yet.
        case outbound
        /// Messages read from connections and not handled yet.
        case inbound

        /// The `consumer` label in `/metrics`.
        public var label: String {
            switch self {
            case .updateHistory: "update_history"
            case .snapshots: "snapshots"
            case .historyReplies: "history_replies"
            case .outbound: "outbound"
            case .inbound: "inbound"
            }
        }

        /// The consumer's part of the limit, in percent. Outbound queues get the most: every subscriber has one.
        var percent: Int {
            switch self {
            case .updateHistory: 25
            case .snapshots: 20
            case .historyReplies: 10
            case .outbound: 35
            case .inbound: 10
            }
        }
    }

    /// One consumer's bytes against its share.
    public final class Account: Sendable {
        public let consumer: Consumer
        /// The most bytes this consumer should hold.
        public let share: Int
        private let used = Atomic<Int>(0)
        private let degradationCount = Atomic<Int>(0)

        init(_ consumer: Consumer, share: Int) {
            self.consumer = consumer
            self.share = share
        }

        /// Bytes held now.
        public var bytes: Int { used.load(ordering: .relaxed) }

        /// Bytes held beyond the share (0 while within it).
        public var excess: Int { max(0, bytes - share) }

        /// Whether the consumer holds more than its share: it must give some back.
        public var isOver: Bool { bytes > share }

        /// Counts `count` bytes the consumer now holds, whatever its share (it holds them already, or must:
        /// the consumer then gives back what it can, see ``isOver``).
        public func charge(_ count: Int) {
            used.add(count, ordering: .relaxed)
        }

        /// Counts `count` bytes only if that keeps the consumer within its share; false (nothing counted) otherwise.
        public func charge(ifRoomFor count: Int) -> Bool {
            var current = used.load(ordering: .relaxed)
            while current + count <= share {
                let (exchanged, original) = used.compareExchange(
                    expected: current, desired: current + count, ordering: .relaxed)
                if exchanged { return true }
                current = original
            }
            return false
        }

        /// Gives back `count` bytes counted before.
        public func release(_ count: Int) {
            used.subtract(count, ordering: .relaxed)
        }

        /// Records that the consumer degraded once (dropped, paged, refused or closed something) to stay in its share.
        public func degraded() {
            degradationCount.add(1, ordering: .relaxed)
        }

        /// How many times the consumer degraded.
        public var degradations: Int { degradationCount.load(ordering: .relaxed) }
    }

    /// The limit in bytes.
    public let limit: Int
    private let accounts: [Account]

    /// A budget of `limit` bytes, shared out by ``Consumer`` (update histories 25 %, snapshots 20 %, history replies
    /// 10 %, outbound queues 35 %, inbound backlogs 10 %).
    public init(limit: Int) {
        precondition(limit > 0, "a memory limit must be positive")
        self.limit = limit
        accounts = Consumer.allCases.map {
            Account($0, share: Int((Double(limit) * Double($0.percent) / 100).rounded()))
        }
    }

    /// A budget no server reaches, for libraries and tests that do not set one.
    public static var unlimited: MemoryBudget { MemoryBudget(limit: 1 << 52) }

    /// The account of `consumer`.
    public subscript(consumer: Consumer) -> Account { accounts[consumer.rawValue] }

    /// Bytes held by all consumers.
    public var bytes: Int { accounts.reduce(0) { $0 + $1.bytes } }
}

/// Bytes counted in an account for as long as this object lives: attach one to a buffer shared by many holders (a
/// snapshot queued to a thousand connections) and it is counted once, until the last holder lets go.
public final class MemoryCharge: Sendable {
    public let account: MemoryBudget.Account
    public let bytes: Int
    private let onRelease: (@Sendable () -> Void)?

    /// Counts `bytes` in `account` now; they are given back when the charge is deinitialized, and then
    /// `onRelease` is called (on whatever thread let go last).
    public init(_ bytes: Int, to account: MemoryBudget.Account, onRelease: (@Sendable () -> Void)? = nil) {
        self.account = account
        self.bytes = bytes
        self.onRelease = onRelease
        account.charge(bytes)
    }

    deinit {
        account.release(bytes)
        onRelease?()
    }
}
