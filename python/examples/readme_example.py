import numpy as np
import hipdnn_rs as hd

g = hd.Graph().set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT")
x = g.tensor("x", [2, 3], uid=1)
w = g.tensor("w", [3, 4], uid=2)
y = g.pointwise_unary(g.matmul(x, w), "RELU_FWD")  # relu(x @ w)
g.set_output(y).set_uid(y, 3)
h = hd.Handle.cpu(); g.build(h)
out = g.execute(h, {1: np.ones((2, 3), np.float32), 2: np.arange(-6, 6, dtype=np.float32).reshape(3, 4)})[3]
print(out)  # [[0. 0. 0. 3.] [0. 0. 0. 3.]]
