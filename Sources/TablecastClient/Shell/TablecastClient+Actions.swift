import Dispatch
import TableModel
import TablecastProtocol
import WebSocketTransport

/// The shell around ``ClientStateMachine``: events go into the machine under the lock, and what it returns is
/// performed after the lock is left (socket commands, timers, answers, events).
extension TablecastClient {
    typealias Machine = ClientStateMachine

    /// Feeds one event into the machine (with the shell's bookkeeping it needs, e.g. a continuation to register)
    /// under the lock, then performs the actions it returned.
    @discardableResult
    func withState<Value: Sendable>(_ event: (inout ShellState) -> (Value, [Machine.Action])) -> Value {
        let (value, actions) = state.withLock { state in
            let (value, actions) = event(&state)
            state.queueCommands(actions)
            return (value, actions)
        }
        perform(actions)
        return value
    }

    /// Feeds one event into the machine and performs the actions it returns.
    func withMachine(_ event: (inout Machine) -> [Machine.Action]) {
        withState { state in ((), event(&state.machine)) }
    }

    /// Performs actions returned by the machine, outside the lock; their socket commands were queued under it and
    /// are written last: an intent's prediction is reported before the intent leaves, so that its answer, handled
    /// on another thread, cannot be reported first (a refused intent's prediction would otherwise stay shown).
    func perform(_ actions: [Machine.Action]) {
        // By index, as queueCommands does: binding each action copied it.
        for index in actions.indices {
            switch actions[index] {
            case .socket:
                break // written below, in the order queued
            case .schedule(let timer, let deadline):
                schedule(timer, at: deadline)
            case .resume(let id, let result):
                state.withLock { $0.responses.removeValue(forKey: id) }?.resume(with: result)
            case .settle(let id, let result):
                state.withLock { $0.answers.removeValue(forKey: id) }?.settle(result)
            case .emit(let event):
                emit(event)
            case .fetchToken(let use):
                fetchToken(for: use)
            }
        }
        if actions.contains(where: { if case .socket = $0 { true } else { false } }) { writeQueuedCommands() }
    }

    /// Performs the queued socket commands unless another thread is at it (it performs these too, in order).
    private func writeQueuedCommands() {
        var commands = state.withLock { $0.takeCommands(writer: false) }
        while !commands.isEmpty {
            for command in commands { perform(command) }
            commands = state.withLock { $0.takeCommands(writer: true) }
        }
    }

    private func perform(_ command: Machine.SocketCommand) {
        switch command {
        case .open(let socket, let endpoint):
            let connection = transport.connect(
                endpoints[endpoint], receiver: SocketReceiver(client: self, socket: socket))
            // Commands are performed in order, so none names an earlier socket from now on.
            transportConnection.withLock { $0 = (socket, connection) }
        case .send(let message, let socket):
            guard let connection = connection(of: socket) else { return }
            transport.send(message.encoded, to: connection)
        case .close(let socket, let code):
            guard let connection = connection(of: socket) else { return }
            transport.close(connection, code: code)
        case .abort(let socket):
            guard let connection = connection(of: socket) else { return }
            transport.abort(connection)
        }
    }

    private func connection(of socket: Machine.SocketID) -> WebSocketConnectionID? {
        transportConnection.withLock { $0?.socket == socket ? $0?.connection : nil }
    }

    private func schedule(_ timer: Machine.Timer, at deadline: ContinuousClock.Instant) {
        let delay = max(.zero, deadline - ContinuousClock.now)
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
            self.withMachine { $0.timerFired(timer) }
        }
    }

    /// Asks the token provider off the lock and the client's queue (it may take a network round trip), and hands
    /// its answer to the machine.
    private func fetchToken(for use: Machine.TokenUse) {
        guard let provider = configuration.tokenProvider else { return }
        Task {
            let result: Result<String, any Error>
            do {
                result = .success(try await provider())
            } catch {
                result = .failure(error)
            }
            queue.async { self.withMachine { $0.tokenGiven(result, for: use, now: .now) } }
        }
    }

    func emit(_ event: Event) {
        onEvent?(event)
        streams.yield(event)
    }
}
