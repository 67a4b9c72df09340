import HeraldCore

extension PushNotification {
    /// Seed 001's paid-order alert, shared by the APNs and FCM request-builder tests.
    package static let seed001 = PushNotification(
        title: "Pedido #1042 pago", subtitle: "Loja Azul", body: "R$ 1.234,56 · Ana Souza", sound: "default", badge: 3,
        threadID: "store-0199a0c4", collapseKey: "order-paid-0199b7e2",
        data: ["kind": "orders.paid", "store_id": "0199a0c4", "order_id": "0199b7e2"], priority: .high,
        androidChannelID: "orders")
}
