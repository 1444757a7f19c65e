"""The file MLflow copies into every seller model and runs to load it ("models from code": no
pickled object in the model, the code is this file and the ``negotiation`` package)."""

from mlflow.models import set_model

from negotiation.tracking._pyfunc import SellerModel

set_model(SellerModel())
