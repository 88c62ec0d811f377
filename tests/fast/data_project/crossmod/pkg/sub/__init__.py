from ..base import Backbone as Trunk
