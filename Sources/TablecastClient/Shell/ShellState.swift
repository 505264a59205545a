import TablecastProtocol

/// What a ``TablecastClient``'s lock guards: the machine, and the shell's bookkeeping that must change with it.
struct ShellState {
    typealias Machine = ClientStateMachine

    var machine: Machine
    /// The continuation of each awaited request; registered under the same lock as the request itself.
    var responses: [Machine.RequestID: CheckedContinuation<ServerMessage, any Error>] = [:]
    /// Where each optimistic intent's answer lands.
    var answers: [Machine.PendingIntentID: PendingIntent.Box] = [:]
    /// Socket commands in the machine's order, not yet performed.
    private var commands: [Machine.SocketCommand] = []
    /// Whether a thread is performing socket commands; the others leave theirs to it, so that writes keep the
    /// machine's order (hello first) without being made under the lock.
    private var writing = false

    init(machine: Machine) { self.machine = machine }

    /// Queues the socket commands among `actions`, in their order.
    mutating func queueCommands(_ actions: [Machine.Action]) {
        // By index: binding each action would copy it, an update's event with all its strings and arrays.
        for index in actions.indices {
            if case .socket(let command) = actions[index] { commands.append(command) }
        }
    }

    /// The queued commands for the thread that is to perform them: `writer` is true for the one performing them
    /// already. Empty when there are none (the writer then stops) or another thread is the writer.
    mutating func takeCommands(writer: Bool) -> [Machine.SocketCommand] {
        guard writer || !writing else { return [] }
        writing = !commands.isEmpty
        defer { commands = [] }
        return commands
    }
}
