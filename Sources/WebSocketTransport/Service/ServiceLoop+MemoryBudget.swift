/// The outbound side of the memory budget (service thread only): connections count their queued bytes in the
/// budget's outbound account (see `Connection.enqueue`), and when it passes its share the biggest holders are closed.
extension ServiceLoop {
    /// The outbound account is past its share: closes the connections whose queues hold the most bytes of it with
    /// 4000, as an overflow does (their queues are dropped at once), biggest first, until what they held covers the
    /// excess, and records each as a degradation. Called on enqueues that leave the account over; after a scan that
    /// could not shed enough none is made again until bytes are given back, so an enqueue costs O(1) amortized.
    func shedOutbound() {
        let account = budget[.outbound]
        guard account.isOver, !outboundSheddingStuck else { return }
        var excess = account.excess
        let holders = connections.values.filter { $0.budgetedBytes > 0 }.sorted { $0.budgetedBytes > $1.budgetedBytes }
        for holder in holders where excess > 0 {
            excess -= holder.budgetedBytes
            holder.shed()
            account.degraded()
        }
        outboundSheddingStuck = account.isOver
    }

    /// Gives back `count` bytes of outbound queues.
    func releaseOutbound(_ count: Int) {
        budget[.outbound].release(count)
        outboundSheddingStuck = false
    }
}
