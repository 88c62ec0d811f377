from .heads import Net, Regressor as Reg
